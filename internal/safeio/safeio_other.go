//go:build !unix

package safeio

import (
	"io/fs"
	"os"
)

const openFlags = 0

const noFollowFlag = 0

func isLoopErr(error) bool { return false }

func isDirErr(error) bool { return false }

func clearNonblock(*os.File) error { return nil }

func links(fs.FileInfo) uint64 { return 1 }
