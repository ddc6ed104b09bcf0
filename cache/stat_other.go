//go:build !linux

package cache

import "io/fs"

// sysStat reports that no extra stat data is available.
func sysStat(fs.FileInfo) (sysInfo, bool) { return sysInfo{}, false }
