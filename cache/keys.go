package cache

import (
	"encoding/binary"
	"fmt"
)

// Badger key layout, format version 1 (docs/cache-format.md). Every key
// starts with keyFormat, then a namespace byte:
//
//	1 'b' <digest: 32 bytes>                   blob header (written last)
//	1 'c' <blob id: 16 bytes> <index: uint32>  chunk of a blob's bytes
//	1 'm' <key: 32 bytes>                      manifest
//	1 's' <stage address>                      last parameter snapshot
//	1 't' <absolute path>                      stat cache entry
//	1 'x' <name>                               meta value (e.g. "gc.last")
//
// Integers are big-endian so that a blob's chunks sort in order. A later
// format uses another first byte; this version neither reads nor removes
// such keys.
const keyFormat byte = 1

const (
	nsBlob     byte = 'b'
	nsChunk    byte = 'c'
	nsManifest byte = 'm'
	nsSnapshot byte = 's'
	nsStat     byte = 't'
	nsMeta     byte = 'x'
)

// blobID names one write of a blob's chunks. Chunks are keyed by it rather
// than by digest because PutBlob streams: the digest is known only after
// the last chunk is written.
type blobID [16]byte

func nsPrefix(ns byte) []byte { return []byte{keyFormat, ns} }

func blobKey(d Digest) []byte { return append(nsPrefix(nsBlob), d[:]...) }

func manifestKey(k Key) []byte { return append(nsPrefix(nsManifest), k[:]...) }

func chunkPrefix(id blobID) []byte { return append(nsPrefix(nsChunk), id[:]...) }

func chunkKey(id blobID, i uint32) []byte {
	return binary.BigEndian.AppendUint32(chunkPrefix(id), i)
}

func stringKey(ns byte, s string) []byte { return append(nsPrefix(ns), s...) }

// parseChunkKey splits a chunk key.
func parseChunkKey(k []byte) (id blobID, i uint32, ok bool) {
	if len(k) != 2+16+4 || k[0] != keyFormat || k[1] != nsChunk {
		return id, 0, false
	}
	copy(id[:], k[2:18])
	return id, binary.BigEndian.Uint32(k[18:]), true
}

// Blob header value: valueFormat, a kind byte, the size (uint64), then
//
//	'i' (inline): the bytes themselves (blobs up to inlineMax)
//	'c' (chunked): chunk size (uint32) and blob id (16 bytes); chunk i holds
//	    bytes [i*chunkSize, min((i+1)*chunkSize, size)).
const (
	headerInline  byte = 'i'
	headerChunked byte = 'c'
)

// blobHeader is a decoded header value.
type blobHeader struct {
	size      int64
	inline    []byte // inline blobs
	chunkSize int    // chunked blobs
	id        blobID
}

func (h *blobHeader) chunks() uint32 {
	if h.inline != nil || h.size == 0 {
		return 0
	}
	return uint32((h.size + int64(h.chunkSize) - 1) / int64(h.chunkSize))
}

func encodeInlineHeader(b []byte) []byte {
	v := make([]byte, 0, 10+len(b))
	v = append(v, valueFormat, headerInline)
	v = binary.BigEndian.AppendUint64(v, uint64(len(b)))
	return append(v, b...)
}

func encodeChunkedHeader(size int64, chunkSize int, id blobID) []byte {
	v := make([]byte, 0, 30)
	v = append(v, valueFormat, headerChunked)
	v = binary.BigEndian.AppendUint64(v, uint64(size))
	v = binary.BigEndian.AppendUint32(v, uint32(chunkSize))
	return append(v, id[:]...)
}

// maxChunks bounds the chunk count a header may imply (a 4 TiB blob of
// 1 MiB chunks), so a corrupt size cannot make a reader loop for ever.
const maxChunks = 1 << 22

// decodeHeader parses a header value; errors are corrupt or foreign misses.
// The inline bytes alias v.
func decodeHeader(d Digest, v []byte) (*blobHeader, error) {
	what := blobWhat(d)
	b, err := decodeValue(what, v)
	if err != nil {
		return nil, err
	}
	if len(b) < 9 {
		return nil, corrupt(what, "header of %d bytes", len(v))
	}
	h := &blobHeader{size: int64(binary.BigEndian.Uint64(b[1:9]))}
	if h.size < 0 {
		return nil, corrupt(what, "negative size")
	}
	switch b[0] {
	case headerInline:
		h.inline = b[9:]
		if int64(len(h.inline)) != h.size {
			return nil, corrupt(what, "inline header holds %d bytes, records %d", len(h.inline), h.size)
		}
	case headerChunked:
		if len(b) != 9+4+16 {
			return nil, corrupt(what, "chunked header of %d bytes", len(v))
		}
		h.chunkSize = int(binary.BigEndian.Uint32(b[9:13]))
		copy(h.id[:], b[13:])
		if h.chunkSize <= 0 || h.size == 0 {
			return nil, corrupt(what, "chunked header with chunk size %d, size %d", h.chunkSize, h.size)
		}
		if h.size/int64(h.chunkSize) >= maxChunks {
			return nil, corrupt(what, "size %d in chunks of %d is too many chunks", h.size, h.chunkSize)
		}
	default:
		return nil, corrupt(what, "unknown header kind %q", b[0])
	}
	return h, nil
}

func (h *blobHeader) String() string {
	if h.inline != nil {
		return fmt.Sprintf("inline, %d bytes", h.size)
	}
	return fmt.Sprintf("%d bytes in %d chunks of %d", h.size, h.chunks(), h.chunkSize)
}
