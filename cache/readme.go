package cache

import (
	"os"
	"path/filepath"
)

// cacheREADME is written into a new cache directory as a courtesy to whoever
// finds it, as Go's build cache does.
const cacheREADME = `This directory holds a dragonx cache: the stored outputs, logs and
manifests of experiment stages, so that unchanged stages are not run again.

Do not edit or copy files in it by hand: the database (db/) is Badger's,
and "lock" keeps two dragonx processes from using it at once.
Inspect and manage it with dragonx itself:

    dragonx cache ls         list cached stage runs
    dragonx cache du         show how much space it uses
    dragonx cache verify     check every stored byte against its digest
    dragonx cache gc         remove old or unneeded entries
    dragonx cache export F   write selected entries to a bundle file
    dragonx cache import F   add the entries of a bundle file

Deleting the whole directory is always safe: dragonx reruns what it needs.
The format is described in docs/cache-format.md of the dragonx sources.
`

// writeREADME writes dir/README if it is missing. Errors are ignored: the
// README is a courtesy, and a read-only or full disk shows up elsewhere.
func writeREADME(dir string) {
	path := filepath.Join(dir, "README")
	if _, err := os.Stat(path); err == nil {
		return
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // never write through a link left there
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return
	}
	_, err = f.WriteString(cacheREADME)
	if cerr := f.Close(); err != nil || cerr != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}
