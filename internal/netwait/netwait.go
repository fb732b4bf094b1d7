// Package netwait has the two steps every start of a child server takes: pick
// a free loopback port, then wait until its health URL answers 200. The test
// environment (versitygw for tests) and the benchmark (versitygw, dhsi
// serve) both use it; it imports nothing of package testing, so the dhsi
// binary can link it.
package netwait

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ErrExited is returned by Healthy when the server exits before answering.
var ErrExited = errors.New("exited during startup")

// FreePort returns a loopback TCP port that was free a moment ago (another
// process may take it before the caller binds it: retry on "address in use").
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Healthy polls url until it answers 200 OK, exited is closed (ErrExited),
// or timeout passes.
func Healthy(url string, exited <-chan struct{}, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %v: %w", timeout, err)
		}
		select {
		case <-exited:
			return ErrExited
		case <-time.After(20 * time.Millisecond):
		}
	}
}
