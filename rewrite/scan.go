package rewrite

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxURLLen bounds the URL a candidate is normalised from. A longer one on
// a blocked host counts as matching: no page of those hosts needs kilobytes
// of path, and padding (dot segments) must not hide a blocked one.
const maxURLLen = 8 << 10

// maxAuthorityLen bounds how far a candidate is read to find its host, so
// that a long string with many candidates is scanned in linear time.
const maxAuthorityLen = 512

// maxDecodeDepth bounds how often a token is percent-decoded to find URLs
// hidden in other URLs' queries (a redirect's ?url=https%3A%2F%2F...).
const maxDecodeDepth = 3

// span is a URL-bearing token of a string, as byte offsets.
type span struct{ start, end int }

// findURLs returns the tokens of text that hold a URL matching the set,
// and the pattern the first one matched. With first, it stops at the first.
func (s urlSet) findURLs(text string, first bool) (spans []span, pattern string) {
	for _, sp := range tokens(text) {
		if p := s.tokenMatch(text[sp.start:sp.end], 0); p != "" {
			if pattern == "" {
				pattern = p
			}
			spans = append(spans, sp)
			if first {
				break
			}
		}
	}
	return spans, pattern
}

// firstMatch returns the pattern that a URL in text matches, or "". The
// text is read twice if it holds tabs or newlines: as it is, and as the
// WHATWG URL parser reads a URL string, without them (WHATWGClean), so
// that "https://hugging\nface.co/datasets/x", which a browser, a Node.js
// or a Python tool fetches as huggingface.co/datasets/x, is found too.
func (s urlSet) firstMatch(text string) string {
	if _, p := s.findURLs(text, true); p != "" {
		return p
	}
	if strings.ContainsAny(text, tabOrNewline) {
		_, p := s.findURLs(WHATWGClean(text), true)
		return p
	}
	return ""
}

// tokens splits text at characters that do not occur in URLs as people
// write them (spaces, quotes, brackets), and trims trailing punctuation.
func tokens(text string) []span {
	var out []span
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		for end > start && strings.IndexByte(".,:;!?", text[end-1]) >= 0 {
			end--
		}
		if end > start {
			out = append(out, span{start, end})
		}
		start = -1
	}
	for i, r := range text {
		if isDelimiter(r) {
			flush(i)
		} else if start < 0 {
			start = i
		}
	}
	flush(len(text))
	return out
}

func isDelimiter(r rune) bool {
	return r < 0x20 || r == 0x7f || unicode.IsSpace(r) || strings.ContainsRune("\"'<>`()[]{}|^", r) || r == utf8.RuneError
}

// tokenMatch returns the pattern that a URL starting anywhere in tok
// matches, or "". A URL may follow a scheme, another URL's path (a proxy
// like r.jina.ai/https://...) or "=" in a query; percent-encoded URLs
// inside are decoded and searched too.
func (s urlSet) tokenMatch(tok string, depth int) string {
	for i := 0; i < len(tok); i++ {
		if !isCandidateStart(tok, i) {
			continue
		}
		if p := s.matchAt(tok[i:]); p != "" {
			return p
		}
	}
	if depth < maxDecodeDepth && strings.Contains(tok, "%") {
		if dec := percentDecode(tok); dec != tok {
			for _, sp := range tokens(dec) {
				if p := s.tokenMatch(dec[sp.start:sp.end], depth+1); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// hostish are the bytes a host (or a scheme) is made of; bytes of UTF-8
// sequences count, for internationalised hosts.
func hostish(c byte) bool {
	return isUnreserved(c) || c == '%' || c >= 0x80
}

// isCandidateStart reports whether a URL may start at tok[i]: the start of
// a run of host bytes, or an ASCII letter or digit right after non-ASCII
// text (a URL written without a space after CJK text).
func isCandidateStart(tok string, i int) bool {
	c := tok[i]
	if !hostish(c) {
		return false
	}
	if i == 0 || !hostish(tok[i-1]) {
		return true
	}
	return tok[i-1] >= 0x80 && c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
}

// matchAt matches the URL at the start of s, cheaply rejecting hosts no
// pattern names before normalising the whole URL.
func (s urlSet) matchAt(u string) string {
	authority, _ := splitAuthority(u[:min(len(u), maxAuthorityLen)])
	host, ok := hostOf(authority)
	if !ok {
		return ""
	}
	host, ok = normalizeHost(host)
	if !ok || !s.matchHost(host) {
		return ""
	}
	if len(u) > maxURLLen {
		for i := range s {
			if s[i].matchHost(host) {
				return s[i].raw
			}
		}
	}
	norm, ok := NormalizeURL(u)
	if !ok {
		return ""
	}
	return s.match(norm)
}

// percentDecode decodes every valid %XX escape.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
