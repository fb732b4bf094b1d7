package catalog

import "testing"

func TestRunSearchStart(t *testing.T) {
	pages := []pageStart{{0, "a.example"}, {64, "c.example"}, {128, "c.example"}, {192, "f.exa"}} // "f.exa": a truncated min
	for _, c := range []struct {
		domain string
		want   int64
	}{
		{"0.example", 0},   // before every page: absent, or at row 0
		{"a.example", 0},   // starts the first page
		{"b.example", 0},   // inside the first page
		{"c.example", 0},   // may start at the end of page 0 and run through pages 1 and 2
		{"d.example", 128}, // after c's pages
		{"f.example", 192}, // the truncated min sorts before it: scan that page
		{"f.exa", 128},     // equal to a min: could end page 2
		{"z.example", 192},
	} {
		if got := runSearchStart(pages, c.domain); got != c.want {
			t.Errorf("runSearchStart(%q) = %d, want %d", c.domain, got, c.want)
		}
	}
	if got := runSearchStart(nil, "x"); got != 0 {
		t.Errorf("no page index: %d", got)
	}
}
