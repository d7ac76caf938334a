//go:build !linux

package localstore

import "io/fs"

// stampOf: without a portable ctime, listings are never cached here.
func stampOf(fs.FileInfo) (dirStamp, bool) { return dirStamp{}, false }
