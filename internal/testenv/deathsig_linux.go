//go:build linux

package testenv

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd when the test process ends, whatever
// way it ends: a run that go test -timeout kills never runs its cleanups,
// and its versitygw went on listening, holding its port and data directory.
// (The signal follows the thread that started cmd; Go ends a thread only
// when a goroutine locked to it exits, which these tests never do.)
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
