//go:build !linux

package main

// capProcessData does nothing where RLIMIT_DATA does not count mmap'd
// memory (macOS counts only brk): a server there has no hard limit.
func capProcessData(n int64) (restore func(), err error) { return func() {}, nil }
