package cache

import (
	"crypto/sha256"
	"hash"
	"io"
)

// VerifyingReader returns a reader of r's bytes that checks them against
// the digest d and, when size is not negative, the size: at the end of r a
// mismatch replaces io.EOF by an error matching ErrMiss and ErrCorrupt, so a
// caller that reads to EOF (PutBlob does) never trusts bad bytes. Remote
// caches pass every downloaded blob through one.
func VerifyingReader(r io.Reader, d Digest, size int64) io.Reader {
	return newVerifyingReader(r, nil, d, size)
}

// verifyingReader passes a blob's bytes through while hashing them. At the
// end of the underlying stream it checks the size and the digest: a
// mismatch replaces io.EOF by a corrupt miss, so a caller that reads to EOF
// never trusts bad bytes. A negative size is not checked.
type verifyingReader struct {
	r    io.Reader
	c    io.Closer // may be nil
	want Digest
	size int64
	n    int64
	h    hash.Hash
	err  error // sticky final result
}

func newVerifyingReader(r io.Reader, c io.Closer, d Digest, size int64) *verifyingReader {
	return &verifyingReader{r: r, c: c, want: d, size: size, h: sha256.New()}
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if n > 0 {
		v.h.Write(p[:n])
		v.n += int64(n)
		if v.size >= 0 && v.n > v.size {
			v.err = corrupt(blobWhat(v.want), "more than the recorded %d bytes", v.size)
			return n, v.err
		}
	}
	if err == io.EOF {
		v.err = v.check()
		return n, v.err
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *verifyingReader) check() error {
	if v.size >= 0 && v.n != v.size {
		return corrupt(blobWhat(v.want), "%d bytes, recorded size %d", v.n, v.size)
	}
	var got Digest
	v.h.Sum(got[:0])
	if got != v.want {
		return corrupt(blobWhat(v.want), "bytes hash to %s", got)
	}
	return io.EOF
}

func (v *verifyingReader) Close() error {
	if v.c == nil {
		return nil
	}
	return v.c.Close()
}
