package cache

import (
	"context"

	"github.com/dgraph-io/badger/v4"
)

// Test hooks for the external tests (package cache_test): they store wrong
// bytes under a digest, as a buggy writer or a disk fault would.

func CorruptMemBlob(s *Mem, d Digest, b []byte) { s.corruptBlob(d, b) }

func CorruptBadgerBlob(s *Badger, d Digest, b []byte) error { return s.putRawBlob(d, b) }

var HashPathCachedAt = hashPathCached

// SmallValueLogs makes Open use 4 MiB value-log files, so that tests see
// space returned by GC without writing hundreds of megabytes.
func SmallValueLogs(o *Options) { o.vlogFileSize = 4 << 20 }

// DamageBadgerHeader overwrites blob d's header with bytes that do not
// decode.
func DamageBadgerHeader(s *Badger, d Digest) error {
	return s.update(context.Background(), func(txn *badger.Txn) error {
		return txn.Set(blobKey(d), []byte{valueFormat, 'z'})
	})
}
