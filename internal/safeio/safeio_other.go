//go:build !unix

package safeio

import "os"

const openFlags = 0

const noFollowFlag = 0

func isLoopErr(error) bool { return false }

func clearNonblock(*os.File) error { return nil }
