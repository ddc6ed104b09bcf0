//go:build linux

package cache

import (
	"io/fs"
	"syscall"
	"time"
)

// sysStat returns what fs.FileInfo does not portably carry: the change
// time, inode, device, and allocated bytes.
func sysStat(info fs.FileInfo) (s sysInfo, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return s, false
	}
	return sysInfo{
		ctime:     time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)),
		ino:       uint64(st.Ino),
		dev:       uint64(st.Dev),
		allocated: int64(st.Blocks) * 512,
	}, true
}
