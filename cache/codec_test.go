package cache

import (
	"testing"
	"time"
)

// FuzzDecodeHeader checks that any stored header value decodes to a miss
// or to a header that re-encodes to the same bytes.
func FuzzDecodeHeader(f *testing.F) {
	var d Digest
	f.Add(encodeInlineHeader([]byte("abc")))
	f.Add(encodeInlineHeader(nil))
	f.Add(encodeChunkedHeader(5<<20, DefaultChunkSize, blobID{1, 2, 3}))
	f.Add([]byte{2, 'i', 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		h, err := decodeHeader(d, v)
		if err != nil {
			return
		}
		var again []byte
		if h.inline != nil {
			again = encodeInlineHeader(h.inline)
		} else {
			again = encodeChunkedHeader(h.size, h.chunkSize, h.id)
		}
		if string(again) != string(v) {
			t.Fatalf("decodeHeader(%x) = %s, which encodes to %x", v, h, again)
		}
		if h.inline == nil && (h.chunks() == 0 || h.chunks() > maxChunks) {
			t.Fatalf("decodeHeader(%x) accepted %d chunks", v, h.chunks())
		}
	})
}

// FuzzDecodeManifest checks that any stored manifest value is a miss or a
// manifest that names the key it is stored under.
func FuzzDecodeManifest(f *testing.F) {
	k := Key{1}
	m := &Manifest{Version: ManifestVersion, Key: k, Stage: "stage.a", Outputs: map[string]Output{"o": {Digest: Digest{2}, Size: 3}}, Started: time.Unix(1, 0).UTC()}
	v, err := encodeManifest(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v)
	f.Add([]byte{1, '{', '}'})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		m, err := decodeManifest(k, v)
		if err != nil {
			return
		}
		if m.Key != k || m.Version != ManifestVersion || m.Outputs == nil {
			t.Fatalf("decodeManifest(%q) = %+v", v, m)
		}
		if _, err := encodeManifest(m); err != nil {
			t.Fatalf("a decoded manifest does not encode: %v", err)
		}
	})
}
