package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/httpapi/cdxtest"
)

// TestCDXKeptColumns (issue 17): the CDX API answers the columns
// --keep-columns kept beside the six CDX fields, as pywb answers a CDXJ
// line's other keys: pywb's default output prints them, and fl, filter
// and collapse take them, in both flavours. A column only a dataset the
// caller may not see keeps answers as one nobody keeps.
func TestCDXKeptColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	cdxj := filepath.Join("..", "..", "testdata", "shared", "cdx", "cc-main-2024-30-cdx-00187.cdxj")
	ingestOK(t, "--store", store, "--dataset", "cc", "--keep-columns", "mime-detected,charset,languages", cdxj)
	secret := filepath.Join(dir, "secret.jsonl")
	if err := os.WriteFile(secret, []byte(`{"url": "https://bibliotheque.missiondefrance.fr/secret", "owner": "x", "score": 1.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ingestOK(t, "--store", store, "--dataset", "secret", "--keep-columns", "owner,score", secret)

	// every key of each URL's latest capture
	want := readCDXJCaptures(t, cdxj)

	admin, _, httpAddr := serveAliceAndRita(t, store, dir)
	if _, err := admin.Exec(ctx, "CALL grant_dataset('secret', 'alice')"); err != nil {
		t.Fatal(err)
	}
	get := cdxtest.HTTPGetter("http://" + httpAddr)
	for deadline := time.Now().Add(15 * time.Second); ; {
		if code, _, _, _ := get("rita", "/secret/cdx?url=missiondefrance.fr"); code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant did not hide secret from rita within 15s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ok := func(user, q string) string {
		t.Helper()
		code, _, body, err := get(user, q)
		if err != nil || code != 200 {
			t.Fatalf("GET %s as %s: %d %v\n%s", q, user, code, err, body)
		}
		return body
	}

	// pywb's default output: each line has every key of its CDXJ line,
	// in its order, then dataset
	body := ok("rita", "/cdx?url=missiondefrance.fr&matchType=domain&output=json")
	lines := strings.Split(strings.TrimSpace(body), "\n")
	order := regexp.MustCompile(`^\{"urlkey": "[^"]*", "timestamp": "\d{14}", "url": ".*", "mime": ".*", "status": ".*", "digest": ".*", "length": ".*", "offset": ".*", "filename": ".*", "mime-detected": ".*", ("charset": "[^"]*", )?("languages": "[^"]*", )?"dataset": "cc"\}$`)
	withCharset := 0
	for _, line := range lines {
		var got map[string]string
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		w, found := want[mustNormalize(t, got["url"])]
		if !found || w.ts != got["timestamp"] {
			t.Fatalf("%s: not the latest capture of the input (%+v)", line, w)
		}
		if !order.MatchString(line) {
			t.Fatalf("pywb's line is not in CDXJ's order:\n%s", line)
		}
		for k, v := range w.keys {
			if got[k] != v {
				t.Fatalf("%s: %s is %q, the CDXJ line says %q", got["url"], k, got[k], v)
			}
		}
		if len(got) != len(w.keys)+3 { // urlkey, timestamp, dataset
			t.Fatalf("%s: keys %v, the CDXJ line's %v", got["url"], got, w.keys)
		}
		if _, ok := got["charset"]; ok {
			withCharset++
		}
	}
	if len(lines) < 10 || withCharset == 0 || withCharset == len(lines) {
		t.Fatalf("%d lines, %d with a charset: the domain should have lines with and without one", len(lines), withCharset)
	}
	if strings.Contains(body, "owner") || strings.Contains(body, "secret") {
		t.Fatalf("rita's answer shows the hidden dataset's line or column:\n%s", body)
	}

	// fl, filter and collapse on them, in the Wayback server's flavour
	body = ok("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&fl=original,mime-detected,languages")
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		fs := strings.Fields(line)
		w := want[mustNormalize(t, fs[0])]
		exp := w.keys["languages"]
		if exp == "" {
			exp = "-" // CDX's mark of a field a line lacks
		}
		if len(fs) != 3 || fs[1] != w.keys["mime-detected"] || fs[2] != exp {
			t.Fatalf("fl=original,mime-detected,languages: %q, the input %v", line, w.keys)
		}
	}
	detected := map[string]int{}
	for u, w := range want {
		if p, err := url.Parse(u); err == nil && strings.HasSuffix(p.Hostname(), "missiondefrance.fr") {
			detected[w.keys["mime-detected"]]++
		}
	}
	if len(detected) < 2 {
		t.Fatalf("the domain's captures have one mime-detected: %v", detected)
	}
	for v, n := range detected {
		body = ok("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&fl=mime-detected&filter=mime-detected:"+url.QueryEscape(regexp.QuoteMeta(v)))
		if got := strings.Count(body, v+"\n"); got != n || strings.Count(body, "\n") != n {
			t.Fatalf("filter=mime-detected:%s: %d lines, the input has %d:\n%s", v, got, n, body)
		}
		// pywb's flavour: = is the whole value
		body = ok("rita", "/cdx?url=missiondefrance.fr&matchType=domain&output=json&fl=url&filter=="+url.QueryEscape("mime-detected:"+v))
		if got := strings.Count(body, "\n"); got != n {
			t.Fatalf("pywb filter==mime-detected:%s: %d lines, the input has %d", v, got, n)
		}
	}
	body = ok("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&fl=mime-detected&collapse=mime-detected")
	if got := strings.Count(body, "\n"); got < len(detected) || got >= len(lines) {
		t.Fatalf("collapse=mime-detected: %d lines of %d", got, len(lines))
	}
	// pages joined by their resume keys (which carry a collapse on one)
	// are the whole answer
	cdxtest.CheckPaging(t, get, []string{
		"url=missiondefrance.fr&matchType=domain&collapse=languages&filter=mime-detected:text/html",
		"url=missiondefrance.fr&matchType=domain&fl=urlkey,timestamp,languages&filter=languages:fra,ltz",
	})
	body = ok("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&fl=original,mime-detected&output=json&limit=1")
	if !strings.HasPrefix(body, `[["original","mime-detected"],`) {
		t.Fatalf("the Wayback server's JSON header row: %s", body)
	}

	// the hidden dataset's columns: for rita, exactly an unknown name's
	// answer; for alice, the secret's values
	const su = "url=bibliotheque.missiondefrance.fr/secret"
	for _, p := range []string{"/cdx?" + su + "&fl=url,%s", "/cdx?" + su + "&filter=%s:x", "/cdx/search/cdx?" + su + "&collapse=%s", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&fl=%s"} {
		code, _, hidden, _ := get("rita", strings.Replace(p, "%s", "owner", 1))
		code2, _, unknown, _ := get("rita", strings.Replace(p, "%s", "nobody", 1))
		if code != 400 || code2 != 400 || strings.ReplaceAll(hidden, "owner", "X") != strings.ReplaceAll(unknown, "nobody", "X") {
			t.Fatalf("%s as rita: %d %s; an unknown column: %d %s", p, code, hidden, code2, unknown)
		}
	}
	if body := ok("alice", "/cdx?"+su+"&output=json"); !strings.Contains(body, `"owner": "x", "score": "1.5", "dataset": "secret"`) {
		t.Fatalf("alice's default line of secret: %s", body)
	}
	if body := ok("alice", "/cdx/search/cdx?"+su+"&fl=original,owner,score,languages"); body != "https://bibliotheque.missiondefrance.fr/secret x 1.5 -\n" {
		t.Fatalf("alice's fl=original,owner,score,languages: %q", body)
	}
}
