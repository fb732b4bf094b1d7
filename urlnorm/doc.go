// Package urlnorm owns DHSI's canonical form of a URL and of a domain: the
// keys of the domain → datasets → URLs index (design 001 §1).
//
// It promises:
//
//   - Parse turns one raw URL line into a URL whose Normalized form is a
//     fixed point (Parse(u.Normalized).Normalized == u.Normalized) and whose
//     Domain is the registered domain (eTLD+1, punycode, no root dot) or, for
//     an IP host, the canonical IP text. It never panics, and every
//     rejection is an *Error with a Reason from a small fixed set whose
//     names are stable, so ingest can count rejects by reason.
//   - Host parsing follows the WHATWG URL Standard's host parser (IDNA
//     UTS #46 via golang.org/x/net/idna, every IPv4 spelling, IPv6
//     compression), then applies DHSI's stricter DNS rules. Every deliberate
//     difference from WHATWG is listed in docs/urlnorm.md and pinned by the
//     skip-list in whatwg_test.go.
//   - Registered domains come from a Public Suffix List: the copy compiled
//     into golang.org/x/net/publicsuffix (Embedded) or a newer
//     public_suffix_list.dat (LoadDat), in full or ICANN-only mode. The
//     list's Version is what ingest records in the manifest.
//   - URLID is xxh3-64 of the raw URL bytes (design §1.2); IDSet finds two
//     raw URLs with one id so ingest can spill them to a side table.
//
// The package holds no mutable state: a Normalizer is immutable after
// NewNormalizer and safe for concurrent use.
//
// docs/urlnorm.md is the reference for the exact rules.
package urlnorm
