package udf

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/urlnorm"
)

func TestURLFuncsThroughSQL(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	norm, _ := urlnorm.NewNormalizer(urlnorm.Config{})
	if err := RegisterURLFuncs(context.Background(), db, norm); err != nil {
		t.Fatal(err)
	}
	var id uint64
	var n, d sql.NullString
	if err := db.QueryRow("SELECT url_id('HTTP://Example.com:80/a?b=2&a=1#x'), norm_url('HTTP://Example.com:80/a?b=2&a=1#x'), etld1('https://www.example.co.uk/x')").Scan(&id, &n, &d); err != nil {
		t.Fatal(err)
	}
	if id != urlnorm.URLID("HTTP://Example.com:80/a?b=2&a=1#x") || n.String != "http://example.com/a?a=1&b=2" || d.String != "example.co.uk" {
		t.Fatalf("url_id %d, norm_url %q, etld1 %q", id, n.String, d.String)
	}
	if err := db.QueryRow("SELECT norm_url('not a url'), etld1('')").Scan(&n, &d); err != nil || n.Valid || d.Valid {
		t.Fatalf("bad input must give NULL: %v %v %v", n, d, err)
	}
	var host, noHost sql.NullString
	if err := db.QueryRow("SELECT url_host('HTTPS://WWW.Bücher.Example.COM.:8443/x?y#z'), url_host('mailto:a@b.c')").Scan(&host, &noHost); err != nil || host.String != "www.xn--bcher-kva.example.com" || noHost.Valid {
		t.Fatalf("url_host %v, of a URL without a host %v (%v)", host, noHost, err)
	}
	bm := roaring.BitmapOf(3, 17)
	b, _ := bm.ToBytes()
	var in, out bool
	if err := db.QueryRow("SELECT roaring_contains(?, 17::UINTEGER), roaring_contains(?, 4::UINTEGER)", b, b).Scan(&in, &out); err != nil || !in || out {
		t.Fatalf("roaring_contains: %v %v %v", in, out, err)
	}
	var e catalog.RawEncoder
	url, raw := "http://example.com/a?a=1&b=2", "HTTP://Example.com:80/a?b=2&a=1#x"
	var got, none sql.NullString
	if err := db.QueryRow("SELECT lake_raw(?, ?), lake_raw(?, NULL)", url, e.Append(nil, url, raw), url).Scan(&got, &none); err != nil || got.String != raw || none.Valid {
		t.Fatalf("lake_raw: %v, %v, %v", got, none, err)
	}
	if err := db.QueryRow("SELECT lake_raw(?, '\\x02\\x01'::BLOB)", url).Scan(&got); err == nil || !strings.Contains(err.Error(), "corrupt raw edit") {
		t.Fatalf("lake_raw of a corrupt edit: %v, %v", got, err)
	}
}
