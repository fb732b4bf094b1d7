package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestDomainDatasetListJoins is issue 17 §3: a table of domains joins the
// index in one statement through domain_dataset_list, with the rows
// domain_datasets gives one domain at a time; what names no domain is NULL.
// ingestSampleDatasets ingests the two sample corpora of testdata/shared
// as datasets pywb, cc and both (pywb's again) into a local store.
func ingestSampleDatasets(t *testing.T, dir string) {
	t.Helper()
	for _, c := range []struct{ ds, file string }{
		{"pywb", "pywb_sample_archive.txt"},
		{"cc", "cc_main_2024_30_cdx00187.txt"},
		{"both", "pywb_sample_archive.txt"},
	} {
		path := filepath.Join("..", "..", "testdata", "shared", "urls", c.file)
		if code := run(context.Background(), []string{"ingest", "--store", dir, "--dataset", c.ds, "--force", path}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("ingest %s: exit %d", c.ds, code)
		}
	}
}

func TestDomainDatasetListJoins(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestSampleDatasets(t, dir)
	cn := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms"))
	domains := queryStrings(t, cn, "SELECT DISTINCT etld1(url) FROM urls ORDER BY 1")
	if len(domains) < 3 {
		t.Fatalf("%d domains in the index", len(domains))
	}
	oneByOne := map[string]bool{}
	for _, d := range append(domains, "absent-domain.example") {
		rows, err := cn.Query(ctx, "SELECT dataset_id, dataset, url_count FROM domain_datasets($1)", d)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int32
			var name string
			var n int64
			if err := rows.Scan(&id, &name, &n); err != nil {
				t.Fatal(err)
			}
			oneByOne[fmt.Sprintf("%s|%d|%s|%d", d, id, name, n)] = true
		}
		rows.Close()
	}
	if _, err := cn.Exec(ctx, "CREATE TEMP TABLE my_domains (domain VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(domains, "absent-domain.example", "not a domain") {
		if _, err := cn.Exec(ctx, "INSERT INTO my_domains VALUES ($1)", d); err != nil {
			t.Fatal(err)
		}
	}
	// twice: pgx keeps the statement prepared, and the second execution
	// runs the plan the first one made
	const join = "SELECT d.domain, x.dataset_id, x.dataset, x.url_count FROM my_domains d, unnest(domain_dataset_list(d.domain)) t(x)"
	var first int
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM ("+join+")").Scan(&first); err != nil {
		t.Fatal(err)
	}
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM ("+join+")").Scan(&first); err != nil {
		t.Fatalf("the same statement again: %v", err)
	}
	rows, err := cn.Query(ctx, join)
	if err != nil {
		t.Fatal(err)
	}
	joined := map[string]bool{}
	for rows.Next() {
		var d, name string
		var id int32
		var n int64
		if err := rows.Scan(&d, &id, &name, &n); err != nil {
			t.Fatal(err)
		}
		joined[fmt.Sprintf("%s|%d|%s|%d", d, id, name, n)] = true
	}
	rows.Close()
	if len(joined) != len(oneByOne) || len(joined) == 0 {
		t.Fatalf("the join gave %d rows, domain_datasets one by one %d:\n%v\n%v", len(joined), len(oneByOne), keys(joined), keys(oneByOne))
	}
	for k := range oneByOne {
		if !joined[k] {
			t.Fatalf("the join lacks %s", k)
		}
	}
	var isNull bool
	if err := cn.QueryRow(ctx, "SELECT domain_dataset_list('not a domain') IS NULL").Scan(&isNull); err != nil || !isNull {
		t.Fatalf("domain_dataset_list('not a domain') IS NULL = %v %v", isNull, err)
	}
	// a statement the client keeps prepared answers from the index as it
	// is now, not as it was when prepared (the function is volatile)
	q := "SELECT len(domain_dataset_list('" + domains[0] + "'))"
	var before, after int
	if err := cn.QueryRow(ctx, q).Scan(&before); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "testdata", "shared", "urls", "pywb_sample_archive.txt")
	if code := run(ctx, []string{"ingest", "--store", dir, "--dataset", "later", "--force", path}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("ingest later: exit %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := cn.QueryRow(ctx, q).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %d, %d before a new dataset holding the domain, 20s after its ingest", q, after, before)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
