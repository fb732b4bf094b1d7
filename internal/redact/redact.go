// Package redact keeps raw URLs out of logs (design 001 §8: logs carry
// domain ids, dataset ids and counts, never raw URLs, at every level below
// debug). Errors that reach a log may quote a user's input; URLs quotes
// every URL in them out.
package redact

import "regexp"

// urlish matches a scheme followed by "://" and everything up to a space or
// a quote: what a URL looks like in an error message.
var urlish = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'"<>` + "`" + `]*`)

// URLs replaces every URL in s with "<url>".
func URLs(s string) string { return urlish.ReplaceAllString(s, "<url>") }

// Error is an error whose text has its URLs replaced, for a log.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return URLs(err.Error())
}
