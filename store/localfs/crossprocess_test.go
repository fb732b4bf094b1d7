package localfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dhsi/dhsi/store"
)

// childDirEnv, when set, makes TestCrossProcessChild act as one of the
// processes TestCrossProcessIncrementsAreNeverLost starts.
const childDirEnv = "DHSI_LOCALFS_CHILD_DIR"

const (
	crossProcesses  = 4
	crossIncrements = 200
	counterKey      = "counter"
)

// TestCrossProcessIncrementsAreNeverLost runs read-modify-write increments
// of one counter from several OS processes at once. Each increment is a Put
// with IfMatch; flock is the only thing ordering them. Every child prints
// the value it replaced on each successful increment, so the test checks not
// just the final count but that each value was replaced exactly once.
func TestCrossProcessIncrementsAreNeverLost(t *testing.T) {
	s := open(t)
	if _, err := s.Put(t.Context(), counterKey, strings.NewReader("0"), store.Cond{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	outs := make([]bytes.Buffer, crossProcesses)
	errs := make([]error, crossProcesses)
	var wg sync.WaitGroup
	for i := range crossProcesses {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrossProcessChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childDirEnv+"="+s.root)
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	wg.Wait()

	var replaced []int
	retries := 0
	for i := range crossProcesses {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], outs[i].String())
		}
		n := 0
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "replaced "); ok {
				x, err := strconv.Atoi(v)
				if err != nil {
					t.Fatal(err)
				}
				replaced = append(replaced, x)
				n++
			}
			if v, ok := strings.CutPrefix(sc.Text(), "retries "); ok {
				x, _ := strconv.Atoi(v)
				retries += x
			}
		}
		if n != crossIncrements {
			t.Errorf("child %d reported %d increments, want %d", i, n, crossIncrements)
		}
	}
	t.Logf("%d increments took %d retries after ErrPreconditionFailed", len(replaced), retries)
	b, _, err := store.ReadAll(t.Context(), s, counterKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), strconv.Itoa(crossProcesses*crossIncrements); got != want {
		t.Errorf("counter = %s, want %s", got, want)
	}
	slices.Sort(replaced)
	for i, v := range replaced {
		if v != i {
			t.Fatalf("the replaced values, sorted, have %d at position %d: an increment was lost or doubled", v, i)
		}
	}
	checkHiddenDirsEmpty(t, s)
}

// TestCrossProcessChild is a child of TestCrossProcessIncrementsAreNeverLost
// and does nothing when run on its own.
func TestCrossProcessChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		return
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	retries := 0
	for range crossIncrements {
		for {
			b, attrs, err := store.ReadAll(ctx, s, counterKey)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("counter holds %q: %v", b, err)
			}
			_, err = s.Put(ctx, counterKey, strings.NewReader(strconv.Itoa(n+1)), store.Cond{IfMatch: attrs.ETag})
			if errors.Is(err, store.ErrPreconditionFailed) {
				retries++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("replaced %d\n", n)
			break
		}
	}
	fmt.Printf("retries %d\n", retries)
}
