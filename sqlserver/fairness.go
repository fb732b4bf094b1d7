package sqlserver

// Fair turns: how sessions share the server's threads when many are busy.
//
// Go runs a goroutine until it blocks. A session whose client answers at
// once never blocks: when it reads, the next query is already in the
// socket, so it keeps its thread query after query. A session that did
// block waits for Go to poll the network, and a scheduler that always has
// a goroutine to run leaves that poll to its monitor thread, which does it
// every 10 ms (runtime.sysmon; golang/go#51651). At 16 clients on 2 cores
// that made the p99 of a 40 µs lookup 10-17 ms and served some connections
// two to three times as often as others, where PostgreSQL, a process per
// session that the kernel schedules, kept its p99 near 1-2 ms.
//
// Invariants, while more sessions are busy than Config.FairAbove (busy:
// received a message in the current or the previous busyEpoch, or
// handling one now):
//
//	F1. A session yields its thread after each answer it completes
//	    (runtime.Gosched: to the tail of the scheduler's global queue, which
//	    is served first in, first out), so the others take their turn.
//	F2. A session waiting for its client's next message does not park in
//	    the network poller while fairSpin lasts: it tries a non-blocking
//	    read and, finding nothing, yields again (back of the queue). Parked,
//	    it would wait for the 10 ms poll; spinning, it is at most one turn
//	    of the queue late. After fairSpin it stops spinning (F3 follows,
//	    then the ordinary park: an idle client costs nothing). It also
//	    stops once fairIdleYields yields in a row returned with no answer
//	    completed meanwhile (busyGauge.answers):
//	    the other sessions are waiting too, a scheduler with nothing to run
//	    polls the network at once, and spinning would only burn a core the
//	    clients need (measured: 12 pgbench clients sending SELECT 1 every
//	    3 ms cost the server 8.9 s of CPU in 5 s with a spin bounded only
//	    by time, 1.4 s with this rule, 0.87-0.91 s without fair turns).
//	F3. A session whose client has not answered when F2's spin ends
//	    waits in the network poller with a read deadline fairPollFirst
//	    away, doubling to fairPollMax, and tries again each time it
//	    passes, while fair turns stay on, for fairWait in all; then it
//	    parks as usual. The poller would wake it at the monitor's next
//	    10 ms poll; a deadline is a timer, and every scheduler thread runs
//	    the timers that are due each time it switches goroutines, which F1
//	    makes it do after every answer. Measured (wirebench, 16 clients,
//	    10M realistic store, DHSI alone, binaries A B A B): domain_datasets
//	    p99 0.94-1.10 ms → 0.71-0.86, p99.9 5.3-8.4 → 3.3-3.4, slowest
//	    answer 20-46 → 8 ms, the slowest connection 1.07-1.13x behind the
//	    fastest → 1.03-1.04x; SELECT 1 p99.9 4.5-4.7 → 1.9-2.1 ms, slowest
//	    answer 20-22 → 8-11 ms; the same throughput. Under F2's light load
//	    (12 pgbench clients, SELECT 1 every 3 ms) 1.11-1.15 s of server
//	    CPU in 5 s against 1.02-1.14 before.
//
//	F4. A session yields (queueTurn) before it handles the first message
//	    of what its client sent at once (the messages one read of the
//	    socket brought: Parse, Bind, Describe, Execute of a pipeline),
//	    before each Sync, and before an Execute that follows another
//	    without a turn between (a batch of Bind, Execute pairs under one
//	    Sync: pgx's SendBatch, JDBC's executeBatch, libpq's pipeline
//	    mode, ~100-200 statements to an 8 KB read), so a statement
//	    starts, and its answer is sent, behind the sessions already
//	    waiting for a thread. Yielding before
//	    every message, as it did until stop 44, gave each statement of the
//	    extended protocol four or five turns, in each of which the
//	    spinning sessions (F2) read their sockets for nothing: pgbench -M
//	    extended at 16 clients, DHSI beside PostgreSQL, SELECT 1 0.77 ->
//	    0.87x, SHOW 0.71 -> 0.81x, SET 0.73 -> 0.84x, DISCARD ALL 0.71 ->
//	    0.85x; wirebench domain_datasets 65.8k -> 67.8k a second, p99 and
//	    the spread of connections unchanged, and the GROUP BY below as
//	    even as before (connections within 1.01-1.03x). Without
//	    it, statements of a few milliseconds split the sessions in two:
//	    half the statements waited for nothing (p50 3.8 ms, a statement's
//	    own time) and the rest for the others (p99 155 ms); as we read the
//	    runtime, a goroutine the network poller wakes runs as soon as a
//	    thread is free, one preempted in a statement waits at the tail of
//	    the global queue. Measured (wirebench, 16 clients, 10M realistic
//	    store, DHSI alone, binaries A B A B, 8 s each): GROUP BY dataset_id
//	    over dan0.net's 66,595 URLs (~4 ms of a core each) connections
//	    2.46-2.52x apart -> 1.06-1.29x, p99 154-156 -> 53-96 ms, 521-522 ->
//	    515-518 tps; domain_datasets, first pages, SELECT 1, and GROUP BY
//	    over Zipf-drawn domains the same throughput and p99 within the runs'
//	    spread. Yielding only before Query and Execute left them 1.48-1.96x
//	    apart. Such statements also hid from the gauge: a session receives
//	    a message once per statement, every 30-50 ms at 16 clients, so the
//	    epochs counted 6 of 16 sessions busy; those handling a message
//	    count too (busyGauge.working). That counts a session blocked
//	    while it handles one too (waiting for its role's slot, running a
//	    DuckDB statement on DuckDB's threads, writing to a slow client),
//	    which may turn fair turns on with few sessions computing. Counting
//	    only a native statement's computing was measured and dropped: the
//	    same GROUP BY's connections 1.88-2.22x apart and 20% fewer
//	    statements a second, which we did not get to explain.
//
// A read broken on purpose (shutdown, pg_terminate_backend: breakRead)
// sets a passed deadline; F3's own deadlines must not hide it, so they
// are set only while the reader is not broken, and checked after.
//
// Below the threshold none applies: with few sessions per core the
// thread that keeps a session while its client answers is the fastest way
// to serve them (the client's reply finds the session's thread still
// there), and the schedulers idle often enough to poll the network.
// Measured (wirebench, 10M realistic store, `SELECT * FROM
// domain_datasets($1)`, DHSI alone): with fair turns at 16 clients p99
// 1.8-2.0 ms and connections within 1.05-1.08x of each other, against
// 11-12.5 ms and 1.8-2.2x without, for 10-15% of the throughput; at 8
// clients they cost 30% and at 4 clients 35%, hence the threshold.
// docs/architecture.md section 8 has more; the README the numbers beside
// PostgreSQL.

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// busyEpoch is the window over which busy sessions are counted.
const busyEpoch = 10 * time.Millisecond

// fairSpin bounds how long a session waits for its client without parking
// (F2): long enough for a client on a loaded machine to answer, short
// enough that a session whose client went quiet soon stops costing turns.
const fairSpin = 2 * time.Millisecond

// fairIdleYields is how many yields in a row that see no answer completed
// end a spin (F2): one can be the scheduler handing the turn straight back.
// Measured (16 clients, DHSI alone, two runs each): 2 gave a p99 of
// 1.9-2.2 ms, 8 1.8-2.0, 16 1.5-1.8; under the light load of F2's note
// they cost 1.2-1.3, 1.4 and 1.8-1.9 s of CPU in 5 s.
const fairIdleYields = 8

// fairPollFirst, fairPollMax and fairWait are F3's: the first deadline,
// the longest (a quiet client costs a wake-up every fairPollMax), and how
// long a session waits that way before it parks as usual.
const (
	fairPollFirst = 100 * time.Microsecond
	fairPollMax   = time.Millisecond
	fairWait      = 20 * time.Millisecond
)

// DefaultFairAbovePerCore is Config.FairAbove's default per GOMAXPROCS.
const DefaultFairAbovePerCore = 4

// busyGauge counts the sessions that received a message in the current
// and the previous busyEpoch, and says whether fair turns are on.
type busyGauge struct {
	above int32 // fair turns when more sessions than this are busy; <0: never
	start time.Time

	mu    sync.Mutex
	epoch int64 // protected by mu
	cur   int32 // sessions seen in epoch; protected by mu
	prev  int32 // sessions seen in epoch-1; protected by mu
	fair  atomic.Bool
	// working counts the sessions handling a message now (enter, leave):
	// a session running statements of 4 ms among 15 others receives a
	// message every 30-50 ms, so the epochs alone did not count it busy
	working atomic.Int32
	// answers counts the answers completed while fair turns are on
	// (yieldTurn): F2 spins on only while others are being answered in its
	// turns
	answers atomic.Uint64
}

func newBusyGauge(above int) *busyGauge {
	return &busyGauge{above: int32(above), start: time.Now()}
}

// on reports whether fair turns apply now.
func (g *busyGauge) on() bool { return g.fair.Load() }

// touch counts a session that received a message; last is the session's
// own record of the epoch it was last counted in (one lock per session per
// epoch, not per message).
func (g *busyGauge) touch(last *int64) {
	if g.above < 0 {
		return
	}
	g.touchIn(int64(time.Since(g.start)/busyEpoch)+1, last) // never 0, a fresh session's last
}

// touchIn is touch in epoch e.
func (g *busyGauge) touchIn(e int64, last *int64) {
	if *last == e {
		return
	}
	*last = e
	g.mu.Lock()
	switch {
	case e == g.epoch:
		g.cur++
	case e == g.epoch+1:
		g.prev, g.cur, g.epoch = g.cur, 1, e
	case e > g.epoch:
		g.prev, g.cur, g.epoch = 0, 1, e
	default: // a session that read the clock before another counted a later epoch
		g.cur++
	}
	g.fair.Store(max(g.prev, g.cur, g.working.Load()) > g.above)
	g.mu.Unlock()
}

// enter and leave bracket a session's handling of one message (F4).
func (g *busyGauge) enter() {
	if g.above >= 0 {
		g.working.Add(1)
	}
}

func (g *busyGauge) leave() {
	if g.above >= 0 {
		g.working.Add(-1)
	}
}

// queueTurn is F4: called when a message arrives. A cancel that comes
// while the session waits for its turn is kept for the statement that
// follows (session.awaitingTurn), as one that comes between a message and its
// statement is.
func (s *session) queueTurn() {
	if !s.srv.busy.on() {
		return
	}
	s.mu.Lock()
	s.awaitingTurn = true
	s.mu.Unlock()
	runtime.Gosched()
	s.mu.Lock()
	s.awaitingTurn = false
	s.mu.Unlock()
}

// yieldTurn is F1: called after an answer is written.
func (s *session) yieldTurn() {
	if busy := s.srv.busy; busy.on() {
		busy.answers.Add(1) // read only by spins, which run only while on
		runtime.Gosched()
	}
}

// fairRead is F2 then F3: a read that, while fair turns are on, waits for
// the client by yielding instead of parking, then by parking with a short
// deadline. done is false when the caller should read as usual (fair
// turns off, the wait ran out, a connection without a file descriptor
// such as TLS, a broken read, or an error, which the ordinary read
// reports in its usual form).
func (r *sessionReader) fairRead(busy *busyGauge, p []byte) (n int, done bool, err error) {
	n, done, err = r.spinRead(busy, p)
	if done || !r.spun {
		return n, done, err
	}
	return r.pollRead(busy, p)
}

// spinRead is F2. r.spun reports, when it hands over, whether it got as far
// as spinning (so F3 may follow).
func (r *sessionReader) spinRead(busy *busyGauge, p []byte) (n int, done bool, err error) {
	r.spun = false
	if !busy.on() {
		return 0, false, nil
	}
	if r.raw == nil {
		sc, ok := r.conn.(syscall.Conn)
		if !ok {
			return 0, false, nil
		}
		if r.raw, err = sc.SyscallConn(); err != nil {
			r.raw = nil
			return 0, false, nil
		}
	}
	var start time.Time
	idle := 0
	for i := 0; ; i++ {
		var rerr error
		again := false
		// a deadline (shutdown, pg_terminate_backend) fails RawConn.Read
		// before f runs: the ordinary read below then reports it
		if err := r.raw.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), p)
			again = rerr == syscall.EAGAIN || rerr == syscall.EINTR
			return true // never wait in the poller: that is the point
		}); err != nil {
			return 0, false, nil
		}
		switch {
		case !again && rerr != nil:
			return 0, false, nil
		case !again && n == 0:
			return 0, true, io.EOF
		case !again:
			return n, true, nil
		}
		r.spun = true
		if i == 0 {
			start = time.Now()
		} else if time.Since(start) > fairSpin {
			return 0, false, nil
		}
		if !busy.on() {
			return 0, false, nil
		}
		if idle >= fairIdleYields {
			return 0, false, nil // nobody was served while it yielded: F3
		}
		answered := busy.answers.Load()
		runtime.Gosched()
		if busy.answers.Load() == answered {
			idle++ // but read once more first
		} else {
			idle = 0
		}
	}
}

// pollRead is F3: reads that park with a deadline, so a timer wakes the
// session where the network poller might not be asked for 10 ms.
func (r *sessionReader) pollRead(busy *busyGauge, p []byte) (n int, done bool, err error) {
	start := time.Now()
	wait := fairPollFirst
	defer r.clearDeadline()
	for busy.on() && time.Since(start) < fairWait {
		_ = r.conn.SetReadDeadline(time.Now().Add(wait))
		if r.broken.Load() { // breakRead came first; its deadline is gone
			return 0, false, nil
		}
		n, err = r.conn.Read(p)
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			if r.broken.Load() {
				return 0, false, nil // the ordinary read reports it
			}
			wait = min(2*wait, fairPollMax)
			continue
		}
		return n, true, err
	}
	return 0, false, nil
}

// clearDeadline ends F3's deadline, unless the read was broken on purpose.
func (r *sessionReader) clearDeadline() {
	_ = r.conn.SetReadDeadline(time.Time{})
	if r.broken.Load() { // breakRead ran meanwhile: put its deadline back
		_ = r.conn.SetReadDeadline(time.Now())
	}
}

// breakRead ends the read the session is blocked in, now and until the
// connection closes: shutdown and pg_terminate_backend.
func (r *sessionReader) breakRead() {
	r.broken.Store(true)
	_ = r.conn.SetReadDeadline(time.Now())
}
