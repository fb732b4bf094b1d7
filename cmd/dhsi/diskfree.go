package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// diskFree is the space an unprivileged writer may still use on the disk
// that holds dir, or would hold it once created: the nearest directory that
// exists answers for it.
func diskFree(dir string) (int64, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	for {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // Bsize's type differs by OS
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
		}
		dir = parent
	}
}
