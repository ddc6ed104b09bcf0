package remote

import (
	"fmt"
	"io"
)

// holdback passes an upload's bytes through but withholds the last of them
// until the source has reported a clean io.EOF. The source is typically a
// local blob whose verification verdict comes with EOF
// (cache.Store.OpenBlob): were the bytes passed on as they come, a server
// would hold the complete, corrupt body before the verdict, and store it.
// Withheld, the body stays one byte short and the server discards it.
type holdback struct {
	r   io.Reader
	c   io.Closer
	buf []byte
	off int   // buf[off:] is pending
	eof bool  // r ended cleanly
	err error // r failed
}

// holdbackBuffer is the size of a holdback's buffer.
const holdbackBuffer = 64 << 10

func (h *holdback) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		pending := len(h.buf) - h.off
		switch {
		case h.eof:
			if pending == 0 {
				return 0, io.EOF
			}
			n := copy(p, h.buf[h.off:])
			h.off += n
			return n, nil
		case h.err != nil:
			return 0, h.err
		case pending > 1:
			// Everything but the last pending byte may go.
			n := copy(p, h.buf[h.off:len(h.buf)-1])
			h.off += n
			return n, nil
		}
		// Keep the pending byte (if any) and read more after it.
		if h.buf == nil {
			h.buf = make([]byte, 0, holdbackBuffer)
		}
		h.buf = append(h.buf[:0], h.buf[h.off:]...)
		h.off = 0
		n, err := h.r.Read(h.buf[len(h.buf):cap(h.buf)])
		h.buf = h.buf[:len(h.buf)+n]
		if err == io.EOF {
			h.eof = true
		} else if err != nil {
			h.err = err
		}
	}
}

// Close closes the source.
func (h *holdback) Close() error {
	if h.c == nil {
		return nil
	}
	return h.c.Close()
}

// exactReader fails when its source yields more than size bytes, or ends
// (cleanly) before size.
type exactReader struct {
	r    io.Reader
	size int64
	n    int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if e.n > e.size {
		return n, fmt.Errorf("the body has more than the %d bytes announced", e.size)
	}
	if err == io.EOF && e.n < e.size {
		return n, fmt.Errorf("the body has %d bytes, not the %d announced", e.n, e.size)
	}
	return n, err
}
