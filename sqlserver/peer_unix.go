//go:build unix

package sqlserver

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the client closed (or reset) its end of c,
// without consuming a byte of what it may have sent: a non-blocking
// MSG_PEEK on the socket (activity.go S4).
func peerClosed(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			closed = n == 0 // orderly shutdown: EOF
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		default:
			closed = true // ECONNRESET and the like
		}
		return true // never wait for readiness
	})
	return closed
}
