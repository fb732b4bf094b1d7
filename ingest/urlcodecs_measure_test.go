package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/klauspost/compress/zstd"
)

// TestMeasureURLCodecs prints what the url column of one dataset of a
// store would cost per URL under other general-purpose codings than the
// lake's (DELTA_BYTE_ARRAY, zstd level 3, 2,048-row pages): stronger zstd
// and brotli levels, larger pages, and query strings kept apart from the
// rest of the URL (as a column of their own would be). It answers how far
// a codec change alone could take the lake (docs/format/lake.md, "What
// bounds the url column"). Skipped unless DHSI_MEASURE_STORE names a store;
// DHSI_MEASURE_DATASET picks the dataset (default 1):
//
//	DHSI_MEASURE_STORE=/tmp/bw/store go test ./ingest -run TestMeasureURLCodecs -v -timeout 30m
//
// Each page is coded on its own, as Parquet codes pages: front coding
// (the common prefix's length and the suffix's, as varints, in one stream;
// the suffixes in another), each stream compressed alone.
func TestMeasureURLCodecs(t *testing.T) {
	root := os.Getenv("DHSI_MEASURE_STORE")
	if root == "" {
		t.Skip("set DHSI_MEASURE_STORE to a store directory")
	}
	ds := os.Getenv("DHSI_MEASURE_DATASET")
	if ds == "" {
		ds = "1"
	}
	files, err := filepath.Glob(filepath.Join(root, "urls", "dataset_id="+ds, "domain_prefix=*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no lake files of dataset %s under %s: %v", ds, root, err)
	}
	var perFile [][]string
	n, raw := 0, 0
	for _, f := range files {
		urls := readURLColumn(t, f)
		perFile = append(perFile, urls)
		n += len(urls)
		for _, u := range urls {
			raw += len(u)
		}
	}
	zstdAt := func(level zstd.EncoderLevel) func([]byte) int {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level))
		if err != nil {
			t.Fatal(err)
		}
		return func(b []byte) int { return len(e.EncodeAll(b, nil)) }
	}
	brotliAt := func(quality int) func([]byte) int {
		return func(b []byte) int {
			var out bytes.Buffer
			w := brotli.NewWriterOptions(&out, brotli.WriterOptions{Quality: quality, LGWin: 22})
			w.Write(b)
			w.Close()
			return out.Len()
		}
	}
	codecs := []struct {
		name  string
		code  func([]byte) int
		pages []int
	}{
		{"zstd level 3 (the lake's)", zstdAt(zstd.SpeedDefault), []int{2048, 8192}},
		{"zstd best", zstdAt(zstd.SpeedBestCompression), []int{2048, 8192}},
		{"brotli 9", brotliAt(9), []int{2048, 8192}},
		{"brotli 11", brotliAt(11), []int{8192}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s, dataset %s: %d URLs in %d files, %.1f bytes each\n", root, ds, n, len(files), float64(raw)/float64(n))
	fmt.Fprintf(&b, "%-26s %6s %12s %12s\n", "codec", "page", "front coded", "query apart")
	for _, c := range codecs {
		for _, page := range c.pages {
			var whole, apart int
			for _, urls := range perFile {
				for i := 0; i < len(urls); i += page {
					rows := urls[i:min(i+page, len(urls))]
					lens, suffixes, _ := frontCode(rows, false)
					whole += c.code(lens) + c.code(suffixes)
					lens, suffixes, queries := frontCode(rows, true)
					apart += c.code(lens) + c.code(suffixes) + c.code(queries)
				}
			}
			fmt.Fprintf(&b, "%-26s %6d %12.2f %12.2f\n", c.name, page, float64(whole)/float64(n), float64(apart)/float64(n))
		}
	}
	// a simple model of URLs: tokens from a per-file vocabulary
	for k, name := range []string{"zstd level 3", "zstd best"} {
		size := 0
		for _, urls := range perFile {
			size += tokenModelBytes(urls, 2048, codecs[k].code)
		}
		fmt.Fprintf(&b, "%-26s %6d %12.2f\n", "tokens, then "+name, 2048, float64(size)/float64(n))
	}
	t.Log(b.String())
}

// tokenModelBytes codes a file's URLs with a vocabulary of its 127 most
// frequent alphanumeric tokens (seen at least 4 times, by bytes saved):
// each URL's tokens (maximal alphanumeric runs, and single other bytes)
// after those it shares with the URL before, as one stream of codes (a
// vocabulary entry, a delimiter, or an escape to the literal stream) and
// one of literal tokens, each page's streams compressed by code; it
// returns the bytes, the vocabulary's included.
func tokenModelBytes(urls []string, page int, code func([]byte) int) int {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	tokens := func(s string) []string {
		var out []string
		for i := 0; i < len(s); {
			j := i + 1
			if alnum(s[i]) {
				for j < len(s) && alnum(s[j]) {
					j++
				}
			}
			out = append(out, s[i:j])
			i = j
		}
		return out
	}
	count := map[string]int{}
	for _, u := range urls {
		for _, tok := range tokens(u) {
			if len(tok) > 1 {
				count[tok]++
			}
		}
	}
	var vocab []string
	for tok, c := range count {
		if c >= 4 {
			vocab = append(vocab, tok)
		}
	}
	sort.Slice(vocab, func(i, j int) bool {
		si, sj := count[vocab[i]]*(len(vocab[i])-1), count[vocab[j]]*(len(vocab[j])-1)
		return si > sj || si == sj && vocab[i] < vocab[j]
	})
	vocab = vocab[:min(len(vocab), 127)]
	ids := map[string]byte{}
	size := 0
	for i, tok := range vocab {
		ids[tok] = byte(0x80 + i)
		size += len(tok) + 1
	}
	for lo := 0; lo < len(urls); lo += page {
		var shared, codes, literals []byte
		var prev []string
		for _, u := range urls[lo:min(lo+page, len(urls))] {
			toks := tokens(u)
			p := 0
			for p < len(toks) && p < len(prev) && toks[p] == prev[p] {
				p++
			}
			shared = binary.AppendUvarint(shared, uint64(p))
			for _, tok := range toks[p:] {
				switch id, ok := ids[tok]; {
				case ok:
					codes = append(codes, id)
				case len(tok) == 1 && !alnum(tok[0]):
					codes = append(codes, tok[0])
				default:
					codes = append(codes, 0x01)
					literals = append(append(literals, tok...), 0)
				}
			}
			codes = append(codes, 0x02) // the URL's end
			prev = toks
		}
		size += code(shared) + code(codes) + code(literals)
	}
	return size
}

// frontCode front-codes urls: lens holds each URL's prefix shared with
// the one before and its suffix's length (varints), suffixes the
// suffixes. With apart, a suffix's query string (after '?', where the
// shared prefix holds none) goes to queries instead, NUL-terminated.
func frontCode(urls []string, apart bool) (lens, suffixes, queries []byte) {
	prev := ""
	for _, u := range urls {
		p := 0
		for p < len(prev) && p < len(u) && prev[p] == u[p] {
			p++
		}
		s := u[p:]
		if apart && !strings.Contains(u[:p], "?") {
			if q := strings.IndexByte(s, '?'); q >= 0 {
				queries = append(append(queries, s[q+1:]...), 0)
				s = s[:q]
			}
		}
		lens = binary.AppendUvarint(binary.AppendUvarint(lens, uint64(p)), uint64(len(s)))
		suffixes = append(suffixes, s...)
		prev = u
	}
	return lens, suffixes, queries
}

// readURLColumn reads a lake file's url column.
func readURLColumn(t *testing.T, path string) []string {
	t.Helper()
	r, err := pqfile.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col := r.MetaData().Schema.ColumnIndexByName("url")
	if col < 0 {
		t.Fatalf("%s: no url column", path)
	}
	var out []string
	buf := make([]parquet.ByteArray, 4096)
	for g := range r.NumRowGroups() {
		cr, err := r.RowGroup(g).Column(col)
		if err != nil {
			t.Fatal(err)
		}
		br, ok := cr.(*pqfile.ByteArrayColumnChunkReader)
		if !ok {
			t.Fatalf("%s: url is not a byte array column", path)
		}
		for {
			got, _, err := br.ReadBatch(int64(len(buf)), buf, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 {
				break
			}
			for _, v := range buf[:got] {
				out = append(out, string(v))
			}
		}
	}
	return out
}
