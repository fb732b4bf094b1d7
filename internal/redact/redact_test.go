package redact

import "testing"

func TestURLs(t *testing.T) {
	for in, want := range map[string]string{
		"domain_urls: bad input 'https://www.example.com/a?b=c' here": "domain_urls: bad input '<url>' here",
		"gopher://bitreich.org/1/scm and http://x":                    "<url> and <url>",
		"no url in example.com/path":                                  "no url in example.com/path",
		"":                                                            "",
	} {
		if got := URLs(in); got != want {
			t.Errorf("URLs(%q) = %q, want %q", in, got, want)
		}
	}
}
