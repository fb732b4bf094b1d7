package urlnorm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// HostKind says what a parsed host is. Domain hosts get a registered domain
// from the Public Suffix List; IP hosts are their own domain.
type HostKind uint8

const (
	HostNone   HostKind = iota // zero value: no host parsed
	HostDomain                 // a DNS name, ASCII (punycode), lower-case
	HostIPv4                   // dotted decimal, e.g. 127.0.0.1
	HostIPv6                   // compressed, in brackets, e.g. [::1]
)

func (k HostKind) String() string {
	switch k {
	case HostDomain:
		return "domain"
	case HostIPv4:
		return "ipv4"
	case HostIPv6:
		return "ipv6"
	}
	return "none"
}

// newWHATWGProfile is UTS #46 ToASCII with the flags the WHATWG URL Standard
// passes in "domain to ASCII" (beStrict = false): CheckHyphens off (labels
// such as "r3---sn-x" are real), CheckBidi and CheckJoiners on,
// UseSTD3ASCIIRules off (so "_" passes; DHSI's own DNS check runs after),
// non-transitional (ß stays ß), VerifyDnsLength off. Options apply in
// order, so the overrides come after MapForLookup.
func newWHATWGProfile() *idna.Profile {
	return idna.New(
		idna.MapForLookup(),
		idna.BidiRule(),
		idna.Transitional(false),
		idna.CheckHyphens(false),
		idna.CheckJoiners(true),
		idna.StrictDomainName(false),
		idna.VerifyDNSLength(false),
	)
}

var (
	errNoHost       = errors.New("empty host")
	errIPv6Unclosed = errors.New("IPv6 address without closing ]")
	errIPv6         = errors.New("invalid IPv6 address")
	errIPv4         = errors.New("invalid IPv4 address (the host ends in a number)")
	errBadUTF8      = errors.New("host is not UTF-8 after percent-decoding")
	errIDNAEmpty    = errors.New("host is empty after IDNA")
)

// appendWHATWGHost runs the WHATWG host parser for a special scheme
// (https://url.spec.whatwg.org/#host-parsing) on h and appends the
// serialized host to dst. ascii is the host's ASCII form before
// lower-casing (the fast path skips the copy) for the checks that follow;
// it is only meaningful for HostDomain. On failure it returns a Reason and
// a detail error and dst unchanged in content up to its original length.
func appendWHATWGHost(p *idna.Profile, dst []byte, h string) (_ []byte, kind HostKind, ascii string, r Reason, err error) {
	if h == "" {
		return dst, HostNone, "", ReasonNoHost, errNoHost
	}
	if h[0] == '[' {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return dst, HostNone, "", ReasonBadIP, errIPv6Unclosed
		}
		addr, ok := parseIPv6(h[1 : len(h)-1])
		if !ok {
			return dst, HostNone, "", ReasonBadIP, errIPv6
		}
		dst = append(dst, '[')
		dst = appendIPv6(dst, &addr)
		dst = append(dst, ']')
		return dst, HostIPv6, "", ReasonNone, nil
	}

	// Domain to ASCII. The fast path is the WHATWG one: an ASCII name with no
	// "xn--" label only needs lower-casing, which nearly every real host is.
	ascii = h
	if !plainASCIIHost(h) {
		domain := h
		if strings.IndexByte(h, '%') >= 0 {
			domain = percentDecodeHost(h)
		}
		if !utf8.ValidString(domain) {
			return dst, HostNone, "", ReasonBadHost, errBadUTF8
		}
		if plainASCIIHost(domain) {
			ascii = domain
		} else {
			a, ierr := p.ToASCII(domain)
			if ierr != nil {
				return dst, HostNone, "", ReasonBadIDNA, fmt.Errorf("idna: %w", ierr)
			}
			if a == "" {
				return dst, HostNone, "", ReasonBadIDNA, errIDNAEmpty
			}
			ascii = a
		}
	}
	for i := 0; i < len(ascii); i++ {
		if forbiddenDomainByte(ascii[i]) {
			return dst, HostNone, "", ReasonBadHost, fmt.Errorf("forbidden code point %q in host", ascii[i])
		}
	}
	if endsInNumber(ascii) {
		v, ok := parseIPv4(ascii)
		if !ok {
			return dst, HostNone, "", ReasonBadIP, errIPv4
		}
		return appendIPv4(dst, v), HostIPv4, "", ReasonNone, nil
	}
	for i := 0; i < len(ascii); i++ {
		dst = append(dst, lower(ascii[i]))
	}
	return dst, HostDomain, ascii, ReasonNone, nil
}

// DNS limits, applied by checkDNSName after the WHATWG steps.
const (
	maxLabelLen = 63
	maxNameLen  = 253 // without the root dot
)

// checkDNSName is DHSI's stricter host rule on top of WHATWG (which allows
// almost any ASCII in a domain): every byte is a letter, digit, '-' or '_',
// labels are non-empty (one trailing root dot is allowed) and within DNS
// lengths. Such names are what a resolver can look up and what a user can
// type as a domain argument; anything else is an extraction artefact
// (`"www.example.com`, `{ids:[…]`) that would pollute the domain table.
func checkDNSName(ascii string) error {
	name := strings.TrimSuffix(ascii, ".")
	if len(name) > maxNameLen {
		return fmt.Errorf("host is %d bytes, DNS allows %d", len(name), maxNameLen)
	}
	labelStart := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			n := i - labelStart
			if n == 0 {
				return errors.New("empty label in host")
			}
			if n > maxLabelLen {
				return fmt.Errorf("host label is %d bytes, DNS allows %d", n, maxLabelLen)
			}
			labelStart = i + 1
			continue
		}
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("character %q in host is not allowed in DNS names", c)
		}
	}
	return nil
}

// plainASCIIHost reports whether h takes the WHATWG fast path: ASCII, no
// percent sign to decode, and no label starting with "xn--" (which IDNA must
// validate).
func plainASCIIHost(h string) bool {
	labelStart := true
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= utf8.RuneSelf || c == '%' {
			return false
		}
		if labelStart && len(h)-i >= 4 && lower(c) == 'x' && lower(h[i+1]) == 'n' && h[i+2] == '-' && h[i+3] == '-' {
			return false
		}
		labelStart = c == '.'
	}
	return true
}

// forbiddenDomainByte is the WHATWG forbidden domain code point set
// restricted to ASCII: forbidden host code points, C0 controls, '%', DEL.
func forbiddenDomainByte(c byte) bool {
	if c <= 0x20 || c == 0x7F {
		return true
	}
	switch c {
	case '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|', '%':
		return true
	}
	return false
}

// percentDecodeHost decodes %XX escapes; a '%' not followed by two hex
// digits stays (and is then rejected as a forbidden code point).
func percentDecodeHost(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// endsInNumber is the WHATWG "ends in a number checker": the last label
// (ignoring one trailing empty label) is all digits or parses as an IPv4
// number (0x…, 0…).
func endsInNumber(s string) bool {
	if strings.HasSuffix(s, ".") {
		if len(s) == 1 {
			return false
		}
		s = s[:len(s)-1]
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	allDigits := true
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			allDigits = false
			break
		}
	}
	if allDigits {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// ipv4NumberCap saturates parsed parts: anything this big fails the range
// checks anyway, and saturating keeps arbitrarily long digit strings from
// overflowing.
const ipv4NumberCap = 1 << 40

// parseIPv4Number is the WHATWG IPv4 number parser: 0x/0X prefix is hex, a
// leading 0 is octal, else decimal; "0x" alone is 0.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, radix = s[2:], 16
	} else if len(s) >= 2 && s[0] == '0' {
		s, radix = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case radix == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case radix == 16 && c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= radix {
			return 0, false
		}
		v = v*radix + d
		if v > ipv4NumberCap {
			v = ipv4NumberCap
		}
	}
	return v, true
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each in any
// radix, the last one filling the remaining bytes (so "0x7f.1" is
// 127.0.0.1 and "2130706433" is 127.0.0.1).
func parseIPv4(s string) (uint32, bool) {
	if strings.HasSuffix(s, ".") && len(s) > 1 {
		s = s[:len(s)-1]
	}
	var nums [4]uint64
	n := 0
	for {
		dot := strings.IndexByte(s, '.')
		part := s
		if dot >= 0 {
			part = s[:dot]
		}
		if n == 4 {
			return 0, false
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return 0, false
		}
		nums[n] = v
		n++
		if dot < 0 {
			break
		}
		s = s[dot+1:]
	}
	for i := 0; i < n-1; i++ {
		if nums[i] > 255 {
			return 0, false
		}
	}
	last := nums[n-1]
	if last >= 1<<(8*(5-n)) {
		return 0, false
	}
	v := last
	for i := 0; i < n-1; i++ {
		v += nums[i] << (8 * (3 - i))
	}
	return uint32(v), true
}

func appendIPv4(dst []byte, v uint32) []byte {
	for i := 3; i >= 0; i-- {
		dst = strconv.AppendUint(dst, uint64(v>>(8*i)&0xFF), 10)
		if i > 0 {
			dst = append(dst, '.')
		}
	}
	return dst
}

// parseIPv6 is the WHATWG IPv6 parser (no zone identifiers; an embedded
// IPv4 part must be four decimal numbers without leading zeros).
func parseIPv6(s string) (addr [8]uint16, ok bool) {
	piece, compress, i := 0, -1, 0
	at := func(i int) int { // -1 is EOF
		if i < len(s) {
			return int(s[i])
		}
		return -1
	}
	if at(0) == ':' {
		if at(1) != ':' {
			return addr, false
		}
		i = 2
		piece++
		compress = piece
	}
	for at(i) != -1 {
		if piece == 8 {
			return addr, false
		}
		if at(i) == ':' {
			if compress != -1 {
				return addr, false
			}
			i++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && at(i) != -1 && isHex(byte(at(i))) {
			value = value*16 + int(unhex(byte(at(i))))
			i++
			length++
		}
		if at(i) == '.' {
			if length == 0 {
				return addr, false
			}
			i -= length
			if piece > 6 {
				return addr, false
			}
			numbersSeen := 0
			for at(i) != -1 {
				ipv4Piece := -1
				if numbersSeen > 0 {
					if at(i) == '.' && numbersSeen < 4 {
						i++
					} else {
						return addr, false
					}
				}
				if c := at(i); c < '0' || c > '9' {
					return addr, false
				}
				for c := at(i); c >= '0' && c <= '9'; c = at(i) {
					number := c - '0'
					switch ipv4Piece {
					case -1:
						ipv4Piece = number
					case 0:
						return addr, false
					default:
						ipv4Piece = ipv4Piece*10 + number
					}
					if ipv4Piece > 255 {
						return addr, false
					}
					i++
				}
				addr[piece] = addr[piece]<<8 | uint16(ipv4Piece)
				numbersSeen++
				if numbersSeen == 2 || numbersSeen == 4 {
					piece++
				}
			}
			if numbersSeen != 4 {
				return addr, false
			}
			break
		} else if at(i) == ':' {
			i++
			if at(i) == -1 {
				return addr, false
			}
		} else if at(i) != -1 {
			return addr, false
		}
		addr[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			addr[piece], addr[compress+swaps-1] = addr[compress+swaps-1], addr[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return addr, false
	}
	return addr, true
}

// appendIPv6 serializes per WHATWG (which matches RFC 5952): lower-case
// hex without leading zeros, the first longest run of two or more zero
// pieces compressed to "::".
func appendIPv6(dst []byte, a *[8]uint16) []byte {
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if a[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	ignore0 := false
	for i := 0; i < 8; i++ {
		if ignore0 && a[i] == 0 {
			continue
		}
		ignore0 = false
		if i == best {
			if i == 0 {
				dst = append(dst, "::"...)
			} else {
				dst = append(dst, ':')
			}
			ignore0 = true
			continue
		}
		dst = strconv.AppendUint(dst, uint64(a[i]), 16)
		if i != 7 {
			dst = append(dst, ':')
		}
	}
	return dst
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
