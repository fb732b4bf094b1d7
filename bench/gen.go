package bench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Zipf parameters of the generator: P(rank k) ∝ (zipfV + k)^-zipfS. With
// v = 20 the largest domain holds ~0.8% of a dataset's URLs and the tail
// domains a handful each.
const (
	zipfS = 1.1
	zipfV = 20
	seed1 = 0x5eed_d451
	seed2 = 0xb3_0c4a
)

var (
	tlds     = []string{"com", "com", "com", "com", "org", "net", "co.uk", "de", "io", "fr", "com.au", "info", "jp", "nl", "co.jp", "edu", "ru", "it", "org.uk", "ca", "es", "com.br", "pl", "in"}
	syl      = []string{"al", "be", "cor", "dan", "el", "fi", "gar", "hol", "in", "jas", "ka", "lo", "mar", "nor", "ol", "pen", "qua", "ros", "sun", "tor", "ul", "ver", "wes", "xan", "yor", "zen", "bright", "green", "blue", "city", "news", "shop", "tech", "data", "web", "net"}
	sections = []string{"news", "blog", "products", "category", "article", "wiki", "forum", "docs", "p", "en", "de", "about", "search", "tag", "user", "2023", "2024", "archive", "media", "static"}
	words    = []string{"alpha", "river", "garden", "market", "review", "guide", "report", "story", "item", "photo", "video", "event", "update", "notes", "list", "index", "page", "post", "thread", "release"}
	exts     = []string{".html", "", "/", ".php", ".htm", ".aspx", ""}
	hosts    = []string{"www.", "www.", "www.", "", "", "blog.", "shop.", "m.", "en.", "news."}
)

// Corpus is the generated data: domain names, per-dataset URL-list files,
// and which (domain, dataset) pairs exist.
type Corpus struct {
	Domains []string
	Files   []string  // one URL list per dataset
	Counts  [][]int32 // Counts[dataset][domain] = URLs generated
	URLs    int64
	index   map[string]int
}

// domainName returns a deterministic, unique registered domain for index i.
func domainName(r *rand.Rand, i int) string {
	n := 1 + r.IntN(3)
	b := make([]byte, 0, 32)
	for range n {
		b = append(b, syl[r.IntN(len(syl))]...)
	}
	if r.IntN(4) == 0 {
		b = append(b, '-')
		b = append(b, syl[r.IntN(len(syl))]...)
	}
	b = strconv.AppendInt(b, int64(i), 36) // uniqueness
	b = append(b, '.')
	b = append(b, tlds[r.IntN(len(tlds))]...)
	return string(b)
}

// Shape is the URL shape of a generated corpus.
type Shape string

const (
	// ShapeSimple is the corpus earlier benchmark numbers were measured on:
	// short paths, a query string on a third of the URLs (~50 bytes).
	ShapeSimple Shape = "simple"
	// ShapeRealistic is shaped like crawl data (issue 16): paths of 1-4
	// words, ~40% with a query string of 1-3 keys in random order, file
	// extensions, subdomains, http and https mixed (~70 bytes).
	ShapeRealistic Shape = "realistic"
)

var (
	realHosts  = []string{"www.", "www.", "www.", "www.", "", "", "", "blog.", "shop.", "m.", "en.", "de.", "fr.", "news.", "api.", "docs.", "static.", "cdn.", "forum.", "support."}
	realExts   = []string{".html", ".html", ".htm", ".php", ".aspx", ".jsp", ".pdf", ".jpg", ".png", "", "", "", "/", "/"}
	queryKeys  = []string{"utm_source", "utm_medium", "utm_campaign", "id", "page", "sort", "ref", "q", "lang", "session", "color", "size", "filter", "v", "lat", "lng", "s", "cat"}
	queryChars = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// appendRealistic appends the realistic URL of sequence number i in domain.
func appendRealistic(b []byte, rd *rand.Rand, domain string, i int) []byte {
	if rd.IntN(10) < 3 {
		b = append(b, "http://"...)
	} else {
		b = append(b, "https://"...)
	}
	b = append(b, realHosts[rd.IntN(len(realHosts))]...)
	b = append(b, domain...)
	for n := 1 + rd.IntN(4); n > 1; n-- {
		b = append(b, '/')
		if rd.IntN(2) == 0 {
			b = append(b, sections[rd.IntN(len(sections))]...)
		} else {
			b = append(b, words[rd.IntN(len(words))]...)
		}
	}
	// the last segment: a slug of 1-3 words and the sequence number, so no
	// URL repeats and counts stay exact
	b = append(b, '/')
	for n := 2 + rd.IntN(3); n > 0; n-- {
		b = append(b, words[rd.IntN(len(words))]...)
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, int64(i), 36)
	b = append(b, realExts[rd.IntN(len(realExts))]...)
	if rd.IntN(10) < 4 {
		keys := rd.Perm(len(queryKeys))[:1+rd.IntN(3)]
		for k, key := range keys {
			if k == 0 {
				b = append(b, '?')
			} else {
				b = append(b, '&')
			}
			b = append(b, queryKeys[key]...)
			b = append(b, '=')
			for n := 3 + rd.IntN(10); n > 0; n-- {
				b = append(b, queryChars[rd.IntN(len(queryChars))])
			}
		}
	}
	return b
}

// Generate writes one URL list per dataset into dir. URLs are spread over
// datasets evenly; within a dataset the domain of each URL is drawn from a
// Zipf over domain ranks (80% the global ranking, 20% a ranking rotated per
// dataset, so datasets differ). Every URL carries its sequence number, so
// URLs never repeat and counts are exact.
func Generate(dir string, urls, domains, datasets int) (*Corpus, error) {
	return GenerateShaped(dir, urls, domains, datasets, ShapeSimple)
}

// GenerateShaped is Generate with URLs of the given shape.
func GenerateShaped(dir string, urls, domains, datasets int, shape Shape) (*Corpus, error) {
	if shape != ShapeSimple && shape != ShapeRealistic {
		return nil, fmt.Errorf("corpus shape %q: want %s or %s", shape, ShapeSimple, ShapeRealistic)
	}
	r := rand.New(rand.NewPCG(seed1, seed2))
	c := &Corpus{Domains: make([]string, domains), Counts: make([][]int32, datasets)}
	for i := range c.Domains {
		c.Domains[i] = domainName(r, i)
	}
	for d := range datasets {
		c.Counts[d] = make([]int32, domains)
		n := urls / datasets
		if d < urls%datasets {
			n++
		}
		rd := rand.New(rand.NewPCG(seed1+uint64(d)+1, seed2))
		z := rand.NewZipf(rd, zipfS, zipfV, uint64(domains-1))
		rot := (d * 7919) % domains
		path := filepath.Join(dir, fmt.Sprintf("ds-%03d.txt", d))
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		var b []byte
		for i := range n {
			dom := int(z.Uint64())
			if rd.IntN(5) == 0 {
				dom = (dom + rot) % domains
			}
			c.Counts[d][dom]++
			b = b[:0]
			if shape == ShapeRealistic {
				b = append(appendRealistic(b, rd, c.Domains[dom], i), '\n')
				w.Write(b)
				continue
			}
			if rd.IntN(3) == 0 {
				b = append(b, "http://"...)
			} else {
				b = append(b, "https://"...)
			}
			b = append(b, hosts[rd.IntN(len(hosts))]...)
			b = append(b, c.Domains[dom]...)
			depth := rd.IntN(3)
			for range depth {
				b = append(b, '/')
				b = append(b, sections[rd.IntN(len(sections))]...)
			}
			b = append(b, '/')
			b = append(b, words[rd.IntN(len(words))]...)
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, exts[rd.IntN(len(exts))]...)
			switch rd.IntN(6) {
			case 0:
				b = append(b, "?id="...)
				b = strconv.AppendInt(b, int64(rd.IntN(100000)), 10)
			case 1:
				b = append(b, "?page="...)
				b = strconv.AppendInt(b, int64(rd.IntN(50)), 10)
				b = append(b, "&sort=date"...)
			}
			b = append(b, '\n')
			w.Write(b)
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		c.Files = append(c.Files, path)
		c.URLs += int64(n)
	}
	return c, nil
}

// Query is one benchmark query: a domain and, for the first page, a dataset
// index (into Corpus.Files) that holds it.
type Query struct {
	Domain  string
	Dataset int
}

// Queries returns n queries whose domains are drawn by the same Zipf as the
// data; each has a dataset that holds the domain (for domain_urls).
func (c *Corpus) Queries(n int, salt uint64) []Query {
	r := rand.New(rand.NewPCG(seed1^salt, seed2+salt))
	z := rand.NewZipf(r, zipfS, zipfV, uint64(len(c.Domains)-1))
	out := make([]Query, 0, n)
	var have []int
	for len(out) < n {
		dom := int(z.Uint64())
		have = c.holding(dom, have[:0])
		if len(have) == 0 {
			continue
		}
		out = append(out, Query{Domain: c.Domains[dom], Dataset: have[r.IntN(len(have))]})
	}
	return out
}

// ColdQueries returns up to n queries on distinct domains (each domain once),
// drawn uniformly over the domains that exist in some dataset, skipping the
// domains in skip.
func (c *Corpus) ColdQueries(n int, salt uint64, skip map[string]bool) []Query {
	r := rand.New(rand.NewPCG(seed1^salt, seed2+salt))
	perm := r.Perm(len(c.Domains))
	var out []Query
	for _, dom := range perm {
		if len(out) >= n {
			break
		}
		if skip[c.Domains[dom]] {
			continue
		}
		have := c.holding(dom, nil)
		if len(have) == 0 {
			continue
		}
		out = append(out, Query{Domain: c.Domains[dom], Dataset: have[r.IntN(len(have))]})
	}
	return out
}

// holding appends to have the datasets (indexes into Counts) that hold
// domain dom.
func (c *Corpus) holding(dom int, have []int) []int {
	for d := range c.Counts {
		if c.Counts[d][dom] > 0 {
			have = append(have, d)
		}
	}
	return have
}
