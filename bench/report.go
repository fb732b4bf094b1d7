package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

type row struct {
	name             string
	dhsi, pg, duck   float64 // NaN-free: ok flags say whether present
	hasD, hasP, hasK bool
	unit             string
	target           string
	met              func(float64) bool
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func fmtVal(v float64, unit string) string {
	switch unit {
	case "ms":
		if v < 10 {
			return fmt.Sprintf("%.3f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "q/s", "URLs/s":
		return fmt.Sprintf("%.0f %s", v, unit)
	case "MiB":
		return fmt.Sprintf("%.0f MiB", v)
	case "B/URL":
		return fmt.Sprintf("%.1f B/URL", v)
	}
	return fmt.Sprint(v)
}

// Print writes the one table.
func (r *Result) Print(w io.Writer) {
	o := r.Opts
	var rows []row
	get := func(m map[string]cell, k string) (cell, bool) { c, ok := m[k]; return c, ok && c.ok() }
	wire := o.Client == ClientWirebench
	if wire {
		r.printWirebench(w)
	}
	for _, q := range []struct {
		key, name, target string
		lim               float64
	}{
		{"dd", "domain_datasets", "p99 <= 1 ms", 1},
		{"fp", "first page (1000 URLs)", "p99 <= 5 ms", 5},
	} {
		for _, n := range o.Clients {
			if wire {
				break // the wirebench table above has them
			}
			k := fmt.Sprintf("%s/%d", q.key, n)
			d, hd := get(r.DHSI, k)
			p, hp := get(r.PG, k)
			u, hu := get(r.Duck, k)
			lim := q.lim
			rows = append(rows,
				row{name: fmt.Sprintf("%s p50, %d client(s)", q.name, n), dhsi: ms(d.p50), pg: ms(p.p50), duck: ms(u.p50), hasD: hd, hasP: hp, hasK: hu, unit: "ms"},
				row{name: fmt.Sprintf("%s p99, %d client(s)", q.name, n), dhsi: ms(d.p99), pg: ms(p.p99), duck: ms(u.p99), hasD: hd, hasP: hp, hasK: hu, unit: "ms",
					target: q.target, met: func(v float64) bool { return v <= lim }},
				row{name: fmt.Sprintf("%s throughput, %d client(s)", q.name, n), dhsi: d.qps, pg: p.qps, duck: u.qps, hasD: hd, hasP: hp, hasK: hu, unit: "q/s"},
			)
		}
	}
	if d, hd := get(r.DHSI, "one/1"); hd {
		p, hp := get(r.PG, "one/1")
		rows = append(rows, row{name: "floor: SELECT 1 p50, 1 client", dhsi: ms(d.p50), pg: ms(p.p50), hasD: true, hasP: hp, unit: "ms"})
	}
	if c, ok := get(r.DHSI, "cold-dd"); ok {
		rows = append(rows,
			row{name: fmt.Sprintf("domain_datasets cold p50 (versitygw, %d distinct domains)", c.n), dhsi: ms(c.p50), hasD: true, unit: "ms"},
			row{name: "domain_datasets cold p99", dhsi: ms(c.p99), hasD: true, unit: "ms"})
	}
	if c, ok := get(r.DHSI, "cold-fp"); ok {
		rows = append(rows,
			row{name: fmt.Sprintf("first page cold p50 (versitygw, %d distinct domains)", c.n), dhsi: ms(c.p50), hasD: true, unit: "ms"},
			row{name: "first page cold p99", dhsi: ms(c.p99), hasD: true, unit: "ms", target: "p99 <= 200 ms", met: func(v float64) bool { return v <= 200 }})
	}
	if o.Grants && r.GrantsRounds[1][1] != nil {
		for _, q := range []struct{ key, name string }{{"dd", "domain_datasets"}, {"fp", "first page"}, {"one", "SELECT 1"}} {
			for _, n := range o.Clients {
				k := fmt.Sprintf("%s/%d", q.key, n)
				var qps [2][2]float64
				var p99 [2][2]time.Duration
				ok := true
				for cfg := 0; cfg < 2; cfg++ {
					for round := 0; round < 2; round++ {
						c, has := get(r.GrantsRounds[cfg][round], k)
						ok = ok && has
						qps[cfg][round], p99[cfg][round] = c.qps, c.p99
					}
				}
				if !ok {
					continue
				}
				mean := func(cfg int) float64 { return (qps[cfg][0] + qps[cfg][1]) / 2 }
				rows = append(rows, row{name: fmt.Sprintf("%s throughput, %d client(s): with grants ÷ without (A B B A: %.0f %.0f | %.0f %.0f q/s; p99 %.2f %.2f | %.2f %.2f ms)",
					q.name, n, qps[0][0], qps[1][0], qps[1][1], qps[0][1], ms(p99[0][0]), ms(p99[1][0]), ms(p99[1][1]), ms(p99[0][1])),
					dhsi: mean(1) / mean(0), hasD: true, unit: "x"})
			}
		}
	}
	build := float64(r.URLs) / r.BuildWall.Seconds()
	rows = append(rows, row{name: fmt.Sprintf("build throughput (dhsi ingest --dataset-per-file of %d datasets, then 1 more; PG: COPY+index+counts+VACUUM)", o.Datasets-1), dhsi: build, hasD: true,
		pg: float64(r.URLs) / r.PGBuild.Seconds(), hasP: r.PGBuild > 0, unit: "URLs/s", target: ">= 300k URLs/s", met: func(v float64) bool { return v >= 300e3 }})
	rows = append(rows, row{name: "build peak RSS (max over ingest children)", dhsi: float64(r.BuildRSS) / (1 << 20), hasD: true, unit: "MiB",
		target: "<= 2 GB at 15M URLs", met: func(v float64) bool { return v <= 2048 }})
	rows = append(rows, row{name: "serve peak RSS (warm runs)", dhsi: float64(r.ServeRSS) / (1 << 20), hasD: r.ServeRSS > 0, unit: "MiB"})
	rows = append(rows, row{name: "bytes per URL on disk (DHSI: urls/+index/; PG: both tables+indexes; DuckDB: urls/)",
		dhsi: float64(r.LakeBytes+r.IndexBytes) / float64(r.URLs), hasD: true,
		pg: float64(r.PGBytes) / float64(r.URLs), hasP: r.PGBytes > 0,
		duck: float64(r.LakeBytes) / float64(r.URLs), hasK: !o.SkipDuckDB,
		unit: "B/URL", target: "<= 20 B/URL", met: func(v float64) bool { return v <= 20 }})

	if wire {
		fmt.Fprintf(w, "\nbuild, bytes and memory: %d URLs, %d domains, %d datasets; Zipf s=%.2f v=%d\n", r.URLs, o.Domains, o.Datasets, zipfS, zipfV)
	} else {
		fmt.Fprintf(w, "\nDHSI benchmark: %d URLs, %d domains, %d datasets; Zipf s=%.2f v=%d; pgx prepared statements over TCP loopback (--client pgx: the client costs more per query than DHSI's server work; --client wirebench for ratios)\n",
			r.URLs, o.Domains, o.Datasets, zipfS, zipfV)
		fmt.Fprintf(w, "warm cells: the %d-query set run once per query (at most %v), then %v warm-up and %v measured per cell\n",
			len(r.queries), o.Duration, o.Warmup, o.Duration)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "measurement\tDHSI\ttarget\tmet\tPostgreSQL 15\tDuckDB scan\tDHSI/PG\tDHSI/DuckDB\t")
	val := func(has bool, v float64, unit string) string {
		if !has {
			return "n/a"
		}
		return fmtVal(v, unit)
	}
	ratio := func(ha, hb bool, a, b float64) string {
		if !ha || !hb || b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	for _, x := range rows {
		met := ""
		if x.met != nil && x.hasD {
			met = "not met"
			if x.met(x.dhsi) {
				met = "met"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.name, val(x.hasD, x.dhsi, x.unit), x.target, met,
			val(x.hasP, x.pg, x.unit), val(x.hasK, x.duck, x.unit), ratio(x.hasD, x.hasP, x.dhsi, x.pg), ratio(x.hasD, x.hasK, x.dhsi, x.duck))
	}
	tw.Flush()
	notes := []string{
		"ratios are DHSI/peer: below 1x is better for latency, RSS and bytes; above 1x is better for q/s and URLs/s",
		fmt.Sprintf("build: %v total wall: %d datasets as one version in %v, then dataset %d alone into that index in %v; DHSI on-disk: lake %d MiB + index %d MiB after gc --keep 1",
			r.BuildWall.Round(time.Millisecond), o.Datasets-1, r.BuildFirst.Round(time.Millisecond), o.Datasets, r.BuildLast.Round(time.Millisecond), r.LakeBytes>>20, r.IndexBytes>>20),
	}
	if r.URLs < 15e6 {
		notes = append(notes, fmt.Sprintf("the RSS target is stated at 15M URLs; this run has %d", r.URLs))
	}
	if r.Check != "" {
		notes = append(notes, "correctness: "+r.Check)
	}
	if o.SkipCold {
		notes = append(notes, "cold runs skipped (--skip-cold)")
	}
	if o.SkipPG {
		notes = append(notes, "PostgreSQL skipped (--skip-pg)")
	}
	if wire {
		notes = append(notes, "the DuckDB-scan peer is measured with --client pgx only")
	}
	fmt.Fprintf(w, "notes:\n  %s\n", strings.Join(notes, "\n  "))
}
