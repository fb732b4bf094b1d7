package domaindict

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

const benchDomains = 1_000_000

// The 1M-domain dictionary is built once per test binary.
var benchDict = sync.OnceValues(func() ([]string, []byte) {
	ds := indextest.Domains(benchDomains, 1)
	var buf bytes.Buffer
	if err := Write(&buf, slices.Values(ds)); err != nil {
		panic(err)
	}
	return ds, buf.Bytes()
})

// queries draws Zipf-distributed domain ids, the popular ones scattered.
func queries(n int, domains []string) []string {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(domains)-1))
	q := make([]string, n)
	for i := range q {
		q[i] = domains[(z.Uint64()*2654435761)%uint64(len(domains))]
	}
	return q
}

func BenchmarkDictLookup(b *testing.B) {
	domains, file := benchDict()
	hits := queries(1<<16, domains)
	misses := make([]string, 1<<16)
	for i := range misses {
		misses[i] = "absent-" + strconv.Itoa(i) + ".example"
	}
	cases := []struct {
		name    string
		opts    Options
		queries []string
	}{
		{"hit/strings-loaded", Options{LoadStrings: true}, hits},
		{"hit/strings-by-range", Options{}, hits},
		{"miss/strings-by-range", Options{}, misses},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cr := &indextest.CountingReaderAt{R: bytes.NewReader(file)}
			d, err := OpenWith(cr, int64(len(file)), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			cr.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Lookup(c.queries[i&(len(c.queries)-1)])
			}
			b.StopTimer()
			b.ReportMetric(float64(cr.Calls())/float64(b.N), "reads/op")
			b.ReportMetric(float64(len(file))/benchDomains, "fileB/domain")
		})
	}
}

// benchDictV1 is the same list in version 1.
var benchDictV1 = sync.OnceValue(func() []byte {
	ds, _ := benchDict()
	var buf bytes.Buffer
	if err := writeV1(&buf, slices.Values(ds), nil); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

func BenchmarkDictOpen(b *testing.B) {
	_, v2 := benchDict()
	v1 := benchDictV1()
	for _, c := range []struct {
		name string
		file []byte
		opts Options
	}{
		{"v1/verify", v1, Options{}}, {"v1/verify+load-strings", v1, Options{LoadStrings: true}}, {"v1/skip-verify", v1, Options{SkipVerify: true}},
		{"v2", v2, Options{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := OpenWith(bytes.NewReader(c.file), int64(len(c.file)), c.opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.file))/benchDomains, "fileB/domain")
		})
	}
}

func BenchmarkDictWrite(b *testing.B) {
	domains, _ := benchDict()
	for _, c := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"v1", func(w io.Writer) error { return writeV1(w, slices.Values(domains), nil) }},
		{"v2", func(w io.Writer) error { return Write(w, slices.Values(domains)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := c.write(&bytes.Buffer{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMeasureDictMemory reports what Open keeps in memory at 1M domains.
// Each option set is opened in a fresh child process (this test binary
// re-run as TestDictOpenChild) so the RSS growth is Open's alone and not
// the generator's. Run with DHSI_INDEX_MEASURE=1.
func TestMeasureDictMemory(t *testing.T) {
	if os.Getenv("DHSI_INDEX_MEASURE") == "" {
		t.Skip("set DHSI_INDEX_MEASURE=1 to measure")
	}
	_, file := benchDict()
	path := t.TempDir() + "/domains.dict"
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("file %.1f MB, %.1f B/domain", float64(len(file))/1e6, float64(len(file))/benchDomains)
	for _, mode := range []string{"default", "load-strings", "skip-verify"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDictOpenChild$", "-test.v")
		cmd.Env = append(os.Environ(), "DHSI_DICT_CHILD="+path, "DHSI_DICT_MODE="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "MEASURE") {
				t.Log(strings.TrimSpace(l))
			}
		}
	}
}

// TestDictOpenChild is TestMeasureDictMemory's child process.
func TestDictOpenChild(t *testing.T) {
	path := os.Getenv("DHSI_DICT_CHILD")
	if path == "" {
		t.Skip("run by TestMeasureDictMemory")
	}
	mode := os.Getenv("DHSI_DICT_MODE")
	o := map[string]Options{"default": {}, "load-strings": {LoadStrings: true}, "skip-verify": {SkipVerify: true}}[mode]
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	rss0 := procStatus("VmRSS")
	start := time.Now()
	d, err := OpenWith(f, st.Size(), o)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	peak := procStatus("VmHWM")
	// Return Open's transient garbage to the OS so RSS shows what stays.
	debug.FreeOSMemory()
	runtime.ReadMemStats(&m1)
	heap := float64(m1.HeapAlloc - m0.HeapAlloc)
	t.Logf("MEASURE %s: open %v, retained heap %.1f MB (%.1f B/domain), RSS +%.1f MB, peak RSS %.1f MB",
		mode, took.Round(time.Millisecond), heap/1e6, heap/float64(d.Len()),
		float64(procStatus("VmRSS")-rss0)/1e6, float64(peak)/1e6)
	runtime.KeepAlive(d)
}

func procStatus(field string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}
