package sqlserver

import "testing"

func TestMillisShowAsPostgreSQLDoes(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "700": "700ms", "1500": "1500ms", "5000": "5s", "60000": "1min", "90000": "90s", "7200000": "2h", "86400000": "1d"} {
		if got := millisShow(in); got != want {
			t.Errorf("millisShow(%s) = %q, want %q", in, got, want)
		}
	}
}
