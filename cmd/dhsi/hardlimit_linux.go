//go:build linux

package main

import (
	"fmt"
	"syscall"
)

// capProcessData lowers the process's RLIMIT_DATA to n bytes (memlimit M2)
// and returns the function that restores it. Linux counts in it every
// private writable mapping: the Go heap, DuckDB's allocator, thread
// stacks; past it mmap and brk fail, so DuckDB's allocator returns no
// memory and DuckDB fails the statement ("Failed to allocate block",
// SQLSTATE 53200) where the kernel's OOM killer would have ended the
// server. A limit already stricter (ulimit -d) is kept.
func capProcessData(n int64) (restore func(), err error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &old); err != nil {
		return nil, fmt.Errorf("RLIMIT_DATA: %w", err)
	}
	if n <= 0 || uint64(n) >= old.Cur {
		return func() {}, nil
	}
	lim := old
	lim.Cur = uint64(n)
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &lim); err != nil {
		return nil, fmt.Errorf("RLIMIT_DATA %d: %w", n, err)
	}
	return func() { _ = syscall.Setrlimit(syscall.RLIMIT_DATA, &old) }, nil
}
