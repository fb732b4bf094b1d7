package sqlserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBusyGaugeCountsSessionsPerEpoch: fair turns come on when more
// sessions than the threshold received a message in this epoch or the
// last, each session counted once per epoch, and go off two epochs after
// the load fell.
func TestBusyGaugeCountsSessionsPerEpoch(t *testing.T) {
	g := newBusyGauge(2)
	last := make([]int64, 4)
	touchAll := func(e int64, sessions ...int) {
		for _, s := range sessions {
			g.touchIn(e, &last[s])
		}
	}
	touchAll(1, 0, 1, 0, 1, 0) // two sessions, many messages
	if g.on() {
		t.Fatal("on with 2 busy sessions, threshold 2")
	}
	touchAll(1, 2)
	if !g.on() {
		t.Fatal("off with 3 busy sessions in one epoch, threshold 2")
	}
	touchAll(2, 0) // the previous epoch's 3 still count
	if !g.on() {
		t.Fatal("off one epoch after 3 sessions were busy")
	}
	touchAll(3, 0, 1)
	if g.on() {
		t.Fatal("on two epochs after the load fell to 2 sessions")
	}
	touchAll(9, 0, 1, 2) // an epoch after a gap: only its own sessions count
	if !g.on() {
		t.Fatal("off with 3 sessions after an idle gap")
	}
	touchAll(20, 3)
	if g.on() {
		t.Fatal("on with 1 session after an idle gap")
	}
	// sessions handling a message count although they received it epochs
	// ago: long statements
	for range 3 {
		g.enter()
	}
	touchAll(30, 0) // one message in this epoch, three statements running
	if !g.on() {
		t.Fatal("off with 3 sessions handling a message, threshold 2")
	}
	for range 3 {
		g.leave()
	}
	touchAll(40, 0)
	if g.on() {
		t.Fatal("on once the statements ended and one session is busy")
	}
	never := newBusyGauge(-1)
	var l int64
	for range 10 {
		never.touch(&l)
	}
	if never.on() {
		t.Fatal("a negative threshold turned fair turns on")
	}
}

// TestSpinReadWaitsWithoutParking: F2's read returns the client's bytes
// when they come within fairSpin, hands over to the ordinary (parking)
// read when they do not, when fair turns are off, when no other session
// was answered while it yielded, or when a deadline is
// set (shutdown, pg_terminate_backend), and reports a closed peer as EOF.
func TestSpinReadWaitsWithoutParking(t *testing.T) {
	client, r, g := fairReaderPair(t)
	server, buf := r.conn, make([]byte, 16)

	// nobody else is being answered: no spin, the ordinary read waits
	start := time.Now()
	if _, done, _ := r.spinRead(g, buf); done {
		t.Fatal("no other session answered: spinRead read instead of handing over")
	}
	if took := time.Since(start); took >= fairSpin {
		t.Errorf("with no other session answered, spun for %v", took)
	}

	// other sessions are answered all along (what yieldTurn counts), on
	// the one scheduler thread the spinner yields to
	otherSessionsAnswered(t, g)

	go func() {
		time.Sleep(200 * time.Microsecond)
		_, _ = client.Write([]byte("Q1"))
	}()
	start = time.Now()
	n, done, err := r.spinRead(g, buf)
	if !done || err != nil || string(buf[:n]) != "Q1" {
		t.Fatalf("bytes sent while spinning: %q %v done %v after %v answers %d", buf[:n], err, done, time.Since(start), g.answers.Load())
	}

	start = time.Now()
	if _, done, _ := r.spinRead(g, buf); done {
		t.Fatal("a silent client: spinRead did not hand over to the ordinary read")
	}
	if took := time.Since(start); took < fairSpin {
		t.Errorf("gave up spinning after %v, before fairSpin", took)
	}

	g.fair.Store(false)
	if _, done, _ := r.spinRead(g, buf); done {
		t.Fatal("fair turns off: spinRead read instead of handing over")
	}
	g.fair.Store(true)

	_ = server.SetReadDeadline(time.Now())
	if _, done, _ := r.spinRead(g, buf); done {
		t.Fatal("a passed deadline: spinRead read instead of handing over")
	}
	if _, err := r.conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the ordinary read after the deadline: %v", err)
	}
	_ = server.SetReadDeadline(time.Time{})

	_ = client.Close()
	n, done, err = r.spinRead(g, buf)
	if !done || err != io.EOF || n != 0 {
		t.Fatalf("a closed client: %d %v done %v, want io.EOF", n, err, done)
	}
}

// TestFairReadWakesWithoutTheNetworkPoller: F3. With the one scheduler
// thread always busy (other sessions answered without pause, so the run
// queue is never empty and Go polls the network only from its monitor),
// bytes a client sends after F2's spin ran out still reach the session by
// fairRead, within a deadline's length; a silent client is handed to the
// ordinary read after fairWait; a read broken meanwhile (shutdown,
// pg_terminate_backend) is handed over at once with its deadline kept.
//
// The timings are of milliseconds, and a loaded machine (CI runs other
// packages' tests beside this one) can hold any goroutine for longer: each
// timed step passes if one of a few attempts meets its bound, which a
// broken F3 never does (it waits for the monitor's 10 ms poll, or for
// fairWait, every time).
func TestFairReadWakesWithoutTheNetworkPoller(t *testing.T) {
	client, r, g := fairReaderPair(t)
	server, buf := r.conn, make([]byte, 16)

	otherSessionsAnswered(t, g)

	// sent well after the spin (fairSpin) gave up: F3 reads it
	bestOf(t, "bytes sent after the spin", func() string {
		sent := make(chan time.Time, 1)
		go func() {
			time.Sleep(fairSpin + 3*time.Millisecond)
			_, _ = client.Write([]byte("Q2"))
			sent <- time.Now()
		}()
		n, done, err := r.fairRead(g, buf)
		got := time.Now()
		at := <-sent
		if err := server.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		if !done {
			// the writer came after fairWait: take its bytes, try again
			if n, err := r.conn.Read(buf); err != nil || string(buf[:n]) != "Q2" {
				t.Fatalf("the ordinary read of bytes F3 missed: %q %v", buf[:n], err)
			}
			return fmt.Sprintf("fairRead handed over %v after the bytes were sent", got.Sub(at))
		}
		if err != nil || string(buf[:n]) != "Q2" {
			t.Fatalf("bytes sent after the spin: %q %v", buf[:n], err)
		}
		if late := got.Sub(at); late > 5*fairPollMax {
			return fmt.Sprintf("read %v after the bytes were sent; a deadline is at most %v", late, fairPollMax)
		}
		return ""
	})

	// a silent client: handed over after fairWait, not before (a lower
	// bound: load only makes it later)
	start := time.Now()
	if _, done, _ := r.fairRead(g, buf); done {
		t.Fatal("a silent client: fairRead did not hand over to the ordinary read")
	}
	if took := time.Since(start); took < fairWait {
		t.Errorf("handed over after %v, before fairWait", took)
	}
	// its deadline is gone: the ordinary read waits for the client
	go func() {
		time.Sleep(5 * time.Millisecond)
		_, _ = client.Write([]byte("Q3"))
	}()
	if n, err := r.conn.Read(buf); err != nil || string(buf[:n]) != "Q3" {
		t.Fatalf("the ordinary read after F3 gave up: %q %v", buf[:n], err)
	}

	// broken while F3 waits: handed over at once, the deadline kept
	bestOf(t, "a broken read", func() string {
		r.broken.Store(false)
		if err := server.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		broke := make(chan time.Time, 1)
		go func() {
			time.Sleep(fairSpin + 2*time.Millisecond)
			broke <- time.Now()
			r.breakRead()
		}()
		if _, done, _ := r.fairRead(g, buf); done {
			t.Fatal("a broken read: fairRead read instead of handing over")
		}
		got := time.Now()
		if _, err := r.conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the ordinary read after breakRead: %v, want the deadline", err)
		}
		if took := got.Sub(<-broke); took > fairWait/2 {
			return fmt.Sprintf("handed over %v after breakRead", took)
		}
		return ""
	})
}

// bestOf runs attempt up to five times until it reports nothing, and fails
// the test with every attempt's report if none passed: a timed step that a
// loaded machine may delay once, but not five times in a row.
func bestOf(t *testing.T, what string, attempt func() (failure string)) {
	t.Helper()
	var failures []string
	for range 5 {
		f := attempt()
		if f == "" {
			return
		}
		failures = append(failures, f)
	}
	t.Errorf("%s, in each of %d attempts: %s", what, len(failures), strings.Join(failures, "; "))
}

// loopbackPair is a connected pair of TCP sockets on 127.0.0.1, closed at
// the end of the test.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// fairReaderPair is a client socket and the session reader of its server
// side, with a gauge whose fair turns are on.
func fairReaderPair(t *testing.T) (client net.Conn, r *sessionReader, g *busyGauge) {
	client, server := loopbackPair(t)
	g = newBusyGauge(0)
	g.fair.Store(true)
	return client, &sessionReader{conn: server}, g
}

// otherSessionsAnswered runs the test on one scheduler thread beside a
// goroutine that counts an answer (what yieldTurn counts) and yields, all
// the time, until the test ends: the run queue is never empty, so Go polls
// the network only from its monitor.
func otherSessionsAnswered(t *testing.T, g *busyGauge) {
	prev := runtime.GOMAXPROCS(1)
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		runtime.GOMAXPROCS(prev)
	})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				g.answers.Add(1)
				runtime.Gosched()
			}
		}
	}()
}
