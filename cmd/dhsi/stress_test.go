package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/usv"
)

// buildOnce builds dhsi once per test binary run; TestMain removes it.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

// TestMain keeps the servers of the tests, which share this process, from
// setting process-wide limits (processLimits), and removes the binary
// dhsiBinary built: 114 MB per run otherwise stays in the temp directory.
func TestMain(m *testing.M) {
	processLimits = false // the servers of many tests share this process
	code := m.Run()
	if buildOnce.path != "" {
		os.RemoveAll(filepath.Dir(buildOnce.path))
	}
	os.Exit(code)
}

func dhsiBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dhsi-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "dhsi")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

type stressConfig struct {
	domains, writers, rounds, compactors int
	killEvery                            time.Duration
	// rawWriters of the writers land per-domain inbox objects with plain S3
	// PUTs in the separated USV form (a␟b␞), create-only, retrying while
	// the key exists, as a non-DHSI worker on any store may
	rawWriters int
	// reshardTo, when set, runs `dhsi reshard --width reshardTo` from the
	// start of round 2, SIGKILLs it once, and runs it again to the end
	reshardTo int
	// servers, when set, serve the store while rounds 2.. land; readers
	// check every answer (issue 15 §2)
	servers int
}

// runStress runs writer and compactor processes against one store, kills
// compactors with SIGKILL at random moments, then checks the invariants of
// package compiler after a final compact --all.
func runStress(t *testing.T, cfg stressConfig, storeArgs []string, env []string, st store.Store) {
	bin := dhsiBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	start := time.Now()

	// each writer owns domains i ≡ w (mod writers); round r has updated_at
	// 2024-01-01 + r hours, so the last round is the latest
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(i, r int) []string {
		return []string{fmt.Sprintf("d%06d.example", i), fmt.Sprintf("round %d", r), fmt.Sprint(r), base.Add(time.Duration(r) * time.Hour).Format(time.RFC3339)}
	}
	writerFile := func(w, r int) string {
		path := filepath.Join(dir, fmt.Sprintf("w%d-r%d.usv", w, r))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		uw := usv.NewWriter(f)
		uw.Write(compiler.DefaultSchemaFields)
		for i := w; i < cfg.domains; i += cfg.writers {
			uw.Write(record(i, r))
		}
		uw.Flush()
		f.Close()
		return path
	}

	cmd := func(args ...string) *exec.Cmd {
		// flags before positional arguments: subcommand, store flags, the rest
		full := append([]string{args[0]}, storeArgs...)
		c := exec.Command(bin, append(full, args[1:]...)...)
		c.Env = append(os.Environ(), env...)
		return c
	}

	// compactors, restarted after each kill
	var kills, restarts int
	var mu sync.Mutex
	procs := make([]*exec.Cmd, cfg.compactors)
	startCompactor := func(i int) {
		c := cmd("compact", "--loop", "--lock-ttl", "2s", "--worker-id", fmt.Sprintf("c%d", i))
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Error(err)
			return
		}
		procs[i] = c
		go c.Wait()
	}
	for i := range procs {
		startCompactor(i)
	}
	// a test that fails half-way must not leave its workers running
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			if p != nil && p.Process != nil {
				p.Process.Signal(syscall.SIGKILL)
			}
		}
	})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for ctx.Err() == nil {
			sleep(ctx, time.Duration(rand.Int64N(int64(cfg.killEvery))))
			if ctx.Err() != nil {
				return
			}
			i := rand.IntN(len(procs))
			mu.Lock()
			if p := procs[i]; p != nil && p.Process != nil {
				p.Process.Signal(syscall.SIGKILL)
				kills++
				startCompactor(i)
				restarts++
			}
			mu.Unlock()
		}
	}()

	// raw writes a round of writer w with plain S3 PUTs: one per-domain
	// inbox object each, in the separated form, created only where no
	// object is (a pending one, or a tombstone, is waited out)
	raw := func(w, r int) error {
		var sep bytes.Buffer
		for _, u := range compiler.DefaultSchemaFields {
			sep.WriteString(u)
			sep.WriteString("\u241F")
		}
		header := strings.TrimSuffix(sep.String(), "\u241F") + "\u241E"
		var ids []int
		for i := w; i < cfg.domains; i += cfg.writers {
			ids = append(ids, i)
		}
		var firstErr error
		var emu sync.Mutex
		parallel.ForEach(len(ids), 16, func(k int) {
			rec := record(ids[k], r)
			body := header + strings.Join(rec, "\u241F") + "\u241E"
			key := compiler.InboxKey(rec[0])
			for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
				_, err := st.Put(context.Background(), key, strings.NewReader(body), store.Cond{IfNoneMatch: true})
				if err == nil {
					return
				}
				if !errors.Is(err, store.ErrPreconditionFailed) {
					emu.Lock()
					firstErr = cmp.Or(firstErr, err)
					emu.Unlock()
					return
				}
				time.Sleep(wait)
			}
		})
		return firstErr
	}
	writeRound := func(w, r int) {
		if w < cfg.rawWriters {
			if err := raw(w, r); err != nil {
				t.Errorf("raw writer %d round %d: %v", w, r, err)
			}
			return
		}
		// the other writers alternate batch objects and per-domain inbox
		// objects (the tombstone protocol, compiler I3)
		batch := []string{"off", "on"}[w%2]
		out, err := cmd("put", "--parallel", "16", "--batch", batch, writerFile(w, r)).CombinedOutput()
		if err != nil {
			t.Errorf("writer %d round %d: %v\n%s", w, r, err, out)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < cfg.writers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); writeRound(w, 1) }()
	}
	wg.Wait()

	// servers and readers from round 2 on: every domain exists now
	readers := startStressReaders(t, cfg, storeArgs)

	// a resharding from the start of round 2, killed once and rerun
	var reshardWG sync.WaitGroup
	reshardKills := 0
	if cfg.reshardTo != 0 {
		reshardWG.Add(1)
		go func() {
			defer reshardWG.Done()
			c := cmd("reshard", "--width", fmt.Sprint(cfg.reshardTo), "--lock-ttl", "2s")
			if err := c.Start(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
			if c.Process.Signal(syscall.SIGKILL) == nil {
				reshardKills++
			}
			c.Wait()
			// not killed: a TTL a loaded machine's slow move cannot outlast
			// (2 s is for the workers killed, whose locks must go stale)
			if out, err := cmd("reshard", "--width", fmt.Sprint(cfg.reshardTo), "--lock-ttl", "10s").CombinedOutput(); err != nil {
				t.Errorf("dhsi reshard (rerun): %v\n%s", err, out)
			} else {
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				t.Logf("dhsi reshard after a SIGKILL: %s", lines[len(lines)-1])
			}
		}()
	}
	// writers: each round waits for the previous one of the same writer
	for w := 0; w < cfg.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 2; r <= cfg.rounds; r++ {
				writeRound(w, r)
			}
		}()
	}
	wg.Wait()
	reshardWG.Wait()
	writeTime := time.Since(start)
	cancel()
	<-killerDone
	mu.Lock()
	for _, p := range procs {
		if p != nil && p.Process != nil {
			p.Process.Signal(syscall.SIGKILL)
		}
	}
	mu.Unlock()
	// Locks and clock objects of killed workers go stale after the TTL (2s)
	// by the store's clock, which S3 gives in whole seconds: a clock object
	// put at 10.1 s lists as 10 s, and the reaper's clock read 2.5 s later
	// is 12 s, not yet past 10 + 2 (CI failed on that once, in stop 38).
	// TTL + 1 s of truncation + margin.
	time.Sleep(3500 * time.Millisecond)

	// 2 s, as the killed workers': a compactor reaps the clock objects a
	// killed worker left once they are older than its own TTL, and 10 s
	// left one behind (a clean CI run in stop 35)
	out, err := cmd("compact", "--all", "--lock-ttl", "2s").CombinedOutput()
	if err != nil {
		t.Fatalf("final compact --all: %v\n%s", err, out)
	}
	readers.stop(t)

	// invariants: every domain once with its latest record; empty inbox; no locks
	bg := context.Background()
	seen := map[string]string{}
	dups := 0
	var inbox, locks, shards, leftovers int
	var strays []string // keys that break the invariants, for the failure message
	width := 2
	if cfg.reshardTo != 0 {
		width = cfg.reshardTo
	}
	err = st.List(bg, compiler.InboxPrefix, func(a store.Attrs) error {
		switch {
		case strings.HasSuffix(a.Key, ".lock"):
			locks++
			strays = append(strays, fmt.Sprintf("%s (modified %s)", a.Key, a.LastModified.Format(time.RFC3339Nano)))
		case strings.HasPrefix(a.Key, compiler.ShardPrefix+".clock-"):
			leftovers++
			strays = append(strays, fmt.Sprintf("%s (modified %s)", a.Key, a.LastModified.Format(time.RFC3339Nano)))
		case strings.HasPrefix(a.Key, compiler.ShardPrefix) && strings.HasSuffix(a.Key, ".usv"):
			shards++
			if id, _ := compiler.ShardOfKey(a.Key); len(id) != width {
				t.Errorf("shard %s of width %d left in a store of width %d", a.Key, len(id), width)
			}
			b, _, err := store.ReadAll(bg, st, a.Key)
			if err != nil {
				return err
			}
			tb, err := compiler.ParseTable(b)
			if err != nil {
				return fmt.Errorf("%s: %w", a.Key, err)
			}
			for _, r := range tb.Rows {
				if _, dup := seen[r[0]]; dup {
					dups++
				}
				seen[r[0]] = r[1]
			}
		default:
			if _, ok := compiler.DomainOfInboxKey(a.Key); ok {
				inbox++
			}
			if _, ok := compiler.ShardOfBatchKey(a.Key); ok {
				inbox++ // a batch object left behind counts as pending too
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkg, err := records.LoadPackage(bg, st); err != nil {
		t.Fatal(err)
	} else if l, err := records.LayoutsOf(pkg); err != nil || l.Current.Width != width || l.Resharding() {
		t.Errorf("layouts %+v %v; want width %d, no resharding", l, err, width)
	}
	wrong := 0
	for i := 0; i < cfg.domains; i++ {
		if seen[fmt.Sprintf("d%06d.example", i)] != fmt.Sprintf("round %d", cfg.rounds) {
			wrong++
		}
	}
	t.Logf("%d domains × %d rounds by %d writers (%d raw S3), %d compactors, %d SIGKILLs of compactors, %d of dhsi reshard --width %d: writes took %v; after compact --all: %d shards, %d domains, %d lost, %d not latest, %d duplicated, %d inbox and batch objects, %d locks, %d clock objects; %s",
		cfg.domains, cfg.rounds, cfg.writers, cfg.rawWriters, cfg.compactors, kills, reshardKills, cfg.reshardTo, writeTime.Round(time.Millisecond), shards, len(seen), cfg.domains-len(seen), wrong, dups, inbox, locks, leftovers, readers.summary())
	if len(seen) != cfg.domains || wrong != 0 || inbox != 0 || locks != 0 || leftovers != 0 || dups != 0 || readers.bad() {
		t.Fatalf("invariants broken; left: %v; final compact --all printed:\n%s", strays, out)
	}
}

// TestStressS3 is issue 3's proof on a real S3 server (versitygw v1.8.0).
// That server's conditional DeleteObject is not atomic with a concurrent
// PutObject (it checks If-Match, then removes the file outside the lock its
// PutObject takes); the compiler's tombstone protocol (compiler/doc.go, I3)
// keeps every acknowledged record anyway, which this test checks.
//
// Issue 15's chaos run extends it: raw S3 writers in the separated USV form
// beside dhsi put's terminated form, a resharding 2 → 3 from the start of
// round 2 (SIGKILLed once, then rerun), and two servers whose readers check
// every answer. DHSI_STRESS_DOMAINS sets the number of domains (default
// 4,000, to keep the package inside go test's 10 minutes on a loaded CI
// machine: 6,000 took it to 428 s; the run is 100,000).
func TestStressS3(t *testing.T) {
	srv := s3test.Start(t)
	st, bucket := srv.NewStore(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // for the in-process servers
	}
	n := 4000 // with servers, a resharding and raw writers: the suite's size
	if testing.Short() {
		n = 2000
	}
	if v := os.Getenv("DHSI_STRESS_DOMAINS"); v != "" {
		fmt.Sscan(v, &n)
	}
	runStress(t, stressConfig{domains: n, writers: 4, rounds: 2, compactors: 8, killEvery: 1500 * time.Millisecond, rawWriters: 1, reshardTo: 3, servers: 2},
		[]string{"--store", "s3://" + bucket},
		srv.Env(), st)
}

func TestStressLocal(t *testing.T) {
	dir := t.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runStress(t, stressConfig{domains: 3000, writers: 2, rounds: 2, compactors: 2, killEvery: time.Second},
		[]string{"--store", dir}, nil, st)
}

// stressReaders loop a count over the domains view on each server and
// count the answers that break issue 15 §2: fewer domains than exist
// (short), a domain twice (duplicated), or an older state than the reader
// saw before (older: the sum of scraper_version, which only grows, falls).
type stressReaders struct {
	n                        int
	stopCh                   chan struct{}
	wg                       sync.WaitGroup
	reads, short, dup, older atomic.Int64
	errs                     atomic.Int64
	firstBad                 atomic.Value
	servers                  int
}

func startStressReaders(t *testing.T, cfg stressConfig, storeArgs []string) *stressReaders {
	r := &stressReaders{n: cfg.domains, stopCh: make(chan struct{}), servers: cfg.servers}
	ctx := context.Background()
	const q = "SELECT count(*), count(DISTINCT domain), coalesce(sum(scraper_version), 0)::BIGINT FROM domains"
	for s := 0; s < cfg.servers; s++ {
		// a server's first refresh reads every pending object: minutes for
		// 100,000 domains in the inbox on a loaded versitygw
		url := startServeWithin(t, 15*time.Minute, io.Discard, append(append([]string{}, storeArgs...), "--cache-dir", t.TempDir(), "--refresh-interval", "200ms")...)
		cn := connect(t, url)
		// wait until the server shows round 1 whole
		deadline := time.Now().Add(5 * time.Minute)
		for {
			var rows, distinct, sum int64
			if err := cn.QueryRow(ctx, q).Scan(&rows, &distinct, &sum); err != nil {
				t.Fatal(err)
			}
			if rows == int64(cfg.domains) && distinct == rows {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d shows %d rows, %d domains; want %d", s, rows, distinct, cfg.domains)
			}
			time.Sleep(200 * time.Millisecond)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var last int64
			for {
				select {
				case <-r.stopCh:
					return
				default:
				}
				var rows, distinct, sum int64
				if err := cn.QueryRow(ctx, q).Scan(&rows, &distinct, &sum); err != nil {
					r.errs.Add(1)
					r.firstBad.CompareAndSwap(nil, fmt.Sprintf("server %d: %v", s, err))
					time.Sleep(100 * time.Millisecond)
					continue
				}
				r.reads.Add(1)
				bad := ""
				switch {
				case rows < int64(r.n) || distinct < int64(r.n):
					r.short.Add(1)
					bad = "short"
				case rows != distinct || rows > int64(r.n):
					r.dup.Add(1)
					bad = "duplicated"
				case sum < last:
					r.older.Add(1)
					bad = "older"
				}
				if bad != "" {
					r.firstBad.CompareAndSwap(nil, fmt.Sprintf("server %d: %s read: %d rows, %d domains, sum %d after %d", s, bad, rows, distinct, sum, last))
				}
				last = max(last, sum)
			}
		}()
	}
	return r
}

func (r *stressReaders) stop(t *testing.T) {
	close(r.stopCh)
	r.wg.Wait()
	if b, _ := r.firstBad.Load().(string); b != "" {
		t.Errorf("first bad read: %s", b)
	}
}

func (r *stressReaders) bad() bool {
	return r.short.Load()+r.dup.Load()+r.older.Load()+r.errs.Load() > 0
}

func (r *stressReaders) summary() string {
	if r.servers == 0 {
		return "no readers"
	}
	return fmt.Sprintf("%d reads on %d servers: %d short, %d duplicated, %d older, %d errors",
		r.reads.Load(), r.servers, r.short.Load(), r.dup.Load(), r.older.Load(), r.errs.Load())
}
