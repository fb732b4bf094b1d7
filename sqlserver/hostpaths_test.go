package sqlserver

import "testing"

func TestReplaceDirOnlyWholePaths(t *testing.T) {
	const dir = "/srv/dhsi"
	for in, want := range map[string]string{
		"cannot open '/srv/dhsi/urls/x.parquet'":          "cannot open '<server dir>/urls/x.parquet'",
		"/srv/dhsi":                                       "<server dir>",
		"at /srv/dhsi, and (/srv/dhsi/a)":                 "at <server dir>, and (<server dir>/a)",
		"/srv/dhsi-other/x is another directory":          "/srv/dhsi-other/x is another directory",
		"/srv/dhsi2":                                      "/srv/dhsi2",
		"invalid URL http://e.com/srv/dhsi/x":             "invalid URL http://e.com/srv/dhsi/x",
		"relative x/srv/dhsi/y":                           "relative x/srv/dhsi/y",
		"no path here":                                    "no path here",
		"store file:///srv/dhsi/x":                        "store file://<server dir>/x",
		"two: '/srv/dhsi/a' '/srv/dhsi/b' http:/srv/dhsi": "two: '<server dir>/a' '<server dir>/b' http:<server dir>",
	} {
		if got := replaceDir(in, dir); got != want {
			t.Errorf("replaceDir(%q) = %q, want %q", in, got, want)
		}
	}
	e := &Error{Message: "file /a/b/c.parquet", Detail: "in /a/b", Hint: "see /a"}
	got := hideHostDirs(e, []string{"/a/b", "/a"})
	if got.Message != "file <server dir>/c.parquet" || got.Detail != "in <server dir>" || got.Hint != "see <server dir>" {
		t.Errorf("hideHostDirs = %+v", got)
	}
	if e.Message != "file /a/b/c.parquet" {
		t.Errorf("hideHostDirs changed its argument: %+v", e)
	}
}
