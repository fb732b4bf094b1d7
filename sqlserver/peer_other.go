//go:build !unix

package sqlserver

import "net"

// peerClosed cannot peek at a socket here: a statement whose client went
// away runs until it ends (or statement_timeout).
func peerClosed(net.Conn) bool { return false }
