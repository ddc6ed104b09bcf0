package cache

import "context"

// Housekeeper is implemented by stores that keep data beside their blobs
// and manifests and can report and reclaim it (the Badger store). Verify
// and GC use it when the store has it.
type Housekeeper interface {
	// Leftovers reports stored bytes that belong to no blob: the chunks of
	// interrupted writes and of deleted blobs. With remove it deletes them.
	// It must not run while another goroutine writes blobs to the same store
	// through a different handle (the Badger store orders it with its own
	// PutBlob calls).
	Leftovers(ctx context.Context, remove bool) (Leftovers, error)
	// Compact returns space freed by deletions to the file system, as far as
	// the store can.
	Compact(ctx context.Context) error
	// DiskSize returns the bytes the store occupies on disk.
	DiskSize() (int64, error)
}

// Leftovers describes data that belongs to no blob.
type Leftovers struct {
	Blobs   int   // interrupted or deleted blob writes
	Chunks  int   // their chunks
	Bytes   int64 // their size
	Removed bool  // whether they were removed
}
