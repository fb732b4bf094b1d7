package urlnorm

import (
	"errors"
	"fmt"
)

// Reason classifies why a URL or domain was rejected. Its String names are
// stable: ingest reject statistics and dashboards key on them, so a name is
// never changed or reused, only added.
type Reason uint8

const (
	// ReasonNone is the zero value; no *Error carries it.
	ReasonNone Reason = iota
	// ReasonEmpty: nothing left after trimming C0 controls and spaces.
	ReasonEmpty
	// ReasonTooLong: the raw URL is longer than Config.MaxLength bytes.
	ReasonTooLong
	// ReasonBadScheme: no scheme and the line does not start like a host;
	// a file: URL (a local file, not a resource of a domain); or, with
	// Config.StrictSuffix, any scheme but http, https, ws, wss and ftp.
	ReasonBadScheme
	// ReasonNoHost: the authority has no host ("http:///x", "http://user@/").
	ReasonNoHost
	// ReasonBadHost: a forbidden code point, an empty label, or a label or
	// name longer than DNS allows.
	ReasonBadHost
	// ReasonBadIP: the host looks like an IP address (ends in a number, or is
	// in brackets) but is not a valid one.
	ReasonBadIP
	// ReasonBadIDNA: UTS #46 ToASCII rejected the host.
	ReasonBadIDNA
	// ReasonBadPort: a port that is not digits or is above 65535.
	ReasonBadPort
	// ReasonHostIsPublicSuffix: the host is itself a public suffix and is
	// not indexed under itself: a single label ("com", "localhost",
	// "intranet"), or, with Config.StrictSuffix, any public suffix
	// ("co.uk", "github.io"). Without StrictSuffix a dotted public-suffix
	// host is indexed under the host, flagged (URL.PublicSuffixHost).
	ReasonHostIsPublicSuffix
	// ReasonNoAuthority: a scheme other than the WHATWG special ones whose
	// URL has no authority ("mailto:a@example.com", "urn:isbn:…",
	// "gopher:/x"), or whose URLs never name a host by the scheme's own
	// definition ("javascript://example.com/…", "data:…").
	ReasonNoAuthority

	numReasons
)

var reasonNames = [numReasons]string{
	ReasonNone:               "none",
	ReasonEmpty:              "empty",
	ReasonTooLong:            "too-long",
	ReasonBadScheme:          "bad-scheme",
	ReasonNoHost:             "no-host",
	ReasonBadHost:            "bad-host",
	ReasonBadIP:              "bad-ip",
	ReasonBadIDNA:            "bad-idna",
	ReasonBadPort:            "bad-port",
	ReasonHostIsPublicSuffix: "host-is-public-suffix",
	ReasonNoAuthority:        "no-authority",
}

// String returns the stable name used in reject statistics.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Reasons lists every rejection reason in a fixed order, for callers that
// pre-register one counter per reason.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonNone + 1; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Error is the only error type Parse, RegisteredDomain and QueryDomain
// return (QueryDomain wraps it).
type Error struct {
	Raw    string // the input exactly as given
	Reason Reason
	Err    error // what exactly was wrong; never nil
}

// maxErrRaw bounds how much of the input an error message quotes: a raw URL
// may be kilobytes of garbage and messages end up in logs.
const maxErrRaw = 200

func (e *Error) Error() string {
	raw := e.Raw
	if len(raw) > maxErrRaw {
		raw = raw[:maxErrRaw] + "…"
	}
	return fmt.Sprintf("urlnorm: %s: %q: %v", e.Reason, raw, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of the *Error in err's chain, or ReasonNone.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonNone
}

func newError(raw string, r Reason, err error) *Error {
	return &Error{Raw: raw, Reason: r, Err: err}
}

// errorf builds the detail error; kept separate so the hot path never
// formats unless it rejects.
func errorf(raw string, r Reason, format string, args ...any) *Error {
	return &Error{Raw: raw, Reason: r, Err: fmt.Errorf(format, args...)}
}
