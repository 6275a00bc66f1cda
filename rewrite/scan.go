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

// maxExtensions bounds how many tokens of one text are read past their end
// (see extendedMatch); a blocked host's URL beyond it counts as matching.
const maxExtensions = 64

// findURLs returns the spans of text that hold a URL matching the set,
// and the pattern the first one matched. With first, it stops at the first.
func (s urlSet) findURLs(text string, first bool) (spans []span, pattern string) {
	return s.scan(text, first, 0)
}

func (s urlSet) scan(text string, first bool, depth int) (spans []span, pattern string) {
	st := &scanState{text: text, lastDot: -2, budget: maxExtensions}
	for _, sp := range tokens(text) {
		if n := len(spans); n > 0 && sp.start < spans[n-1].end {
			continue // part of a URL read past its token
		}
		p := s.tokenMatch(text[sp.start:sp.end], depth)
		if p == "" {
			var end int
			if end, p = s.extendedMatch(st, sp); p != "" {
				sp.end = end
			}
		}
		if p != "" {
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
			_, p := s.scan(dec, true, depth+1)
			return p
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

// blockedHost reports whether the URL at the start of u (read up to
// maxAuthorityLen) is on a host some pattern names.
func (s urlSet) blockedHost(u string) bool {
	authority, _ := splitAuthority(u[:min(len(u), maxAuthorityLen)])
	host, ok := hostOf(authority)
	if !ok {
		return false
	}
	host, ok = normalizeHost(host)
	return ok && s.matchHost(host)
}

// matchAt matches the URL at the start of s, cheaply rejecting hosts no
// pattern names before normalising the whole URL.
func (s urlSet) matchAt(u string) string {
	if !s.blockedHost(u) {
		return ""
	}
	if len(u) > maxURLLen {
		return s.hostPattern(u)
	}
	norm, ok := NormalizeURL(u)
	if !ok {
		return ""
	}
	return s.match(norm)
}

// hostPattern returns the first pattern naming the host of the URL at the
// start of u: the answer for a URL on a blocked host that is not read in
// full (too long), which fails closed.
func (s urlSet) hostPattern(u string) string {
	authority, _ := splitAuthority(u[:min(len(u), maxAuthorityLen)])
	host, _ := hostOf(authority)
	host, _ = normalizeHost(host)
	for i := range s {
		if s[i].matchHost(host) {
			return s[i].raw
		}
	}
	return ""
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

// scanState is what extendedMatch keeps across the tokens of one text.
type scanState struct {
	text    string
	lastDot int // start of the last dot segment in text, -1 if none, -2 not yet known
	budget  int // tokens that may still be read past their end
}

// extendedMatch finds a URL on a blocked host that starts in token sp
// and matches when read past the token's end, as a fetcher reads it. A
// fetcher given "https://huggingface.co/models'/../datasets/x" does not
// stop at the quote: the WHATWG parser (browsers, Node.js) and Python's
// requests keep it in the path and resolve the dot segment after it, to
// /datasets/x. Neither do we know where a tool that finds URLs in prose
// cuts one. So the URL is judged at every place it may end: the first
// occurrence of each delimiter character after the token (any set of
// stop characters stops at one of these), and the end of its path (a
// "?" or "#", or the end of the text). Only a dot segment after the
// token can turn an unblocked URL into a blocked one, so tokens without
// one cost nothing more. The read is bounded by maxURLLen; a dot segment
// further away, or more than maxExtensions tokens to read in one text,
// count as matching (fail closed). It returns the end of the URL and
// the pattern.
func (s urlSet) extendedMatch(st *scanState, sp span) (int, string) {
	if st.lastDotSegment() < sp.end {
		return 0, ""
	}
	text := st.text
	var ends []int
	tok := text[sp.start:sp.end]
	for i := sp.start; i < sp.end; i++ {
		if !isCandidateStart(tok, i-sp.start) || !s.blockedHost(text[i:]) {
			continue
		}
		if strings.ContainsAny(text[i:sp.end], "?#") {
			continue // its path ends in the token
		}
		if ends == nil {
			if st.budget == 0 {
				return sp.end, s.hostPattern(text[i:])
			}
			st.budget--
			var cut bool
			ends, cut = urlEnds(text, sp.end)
			if cut && st.lastDot >= ends[len(ends)-1] {
				return ends[len(ends)-1], s.hostPattern(text[i:])
			}
		}
		for _, end := range ends {
			if norm, ok := NormalizeURL(text[i:end]); ok {
				if p := s.match(norm); p != "" {
					return end, p
				}
			}
		}
	}
	return 0, ""
}

// urlEnds returns where a URL that runs on from the delimiter at text[from]
// may end: at the first occurrence of each delimiter character, and at
// the end of its path ("?", "#" or the end of the text), read at most
// maxURLLen bytes far. cut reports that the path goes on beyond.
func urlEnds(text string, from int) (ends []int, cut bool) {
	limit := min(len(text), from+maxURLLen)
	seen := map[rune]bool{}
	for i := from; i < limit; {
		c := text[i]
		if c == '?' || c == '#' {
			return append(ends, i), false
		}
		r, size := rune(c), 1
		if c >= 0x80 {
			r, size = utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError {
				r = rune(0x110000 + int(c)) // each invalid byte is its own character
			}
		}
		if isDelimiter(r) || r > unicode.MaxRune {
			if !seen[r] {
				seen[r] = true
				ends = append(ends, i)
			}
		}
		i += size
	}
	return append(ends, limit), limit < len(text)
}

// lastDotSegment returns the start of the last ".." path segment of the
// text (in any spelling: %2e, backslashes, ended by a delimiter), or -1.
func (st *scanState) lastDotSegment() int {
	if st.lastDot != -2 {
		return st.lastDot
	}
	st.lastDot = -1
	t := st.text
	for i := 0; i < len(t); i++ {
		if t[i] != '/' && t[i] != '\\' {
			continue
		}
		j := i + 1
		for j < len(t) && !strings.ContainsRune(`/\?#`, rune(t[j])) && !isDelimiterAt(t, j) {
			j++
		}
		if decodeUnreserved(WHATWGClean(t[i+1:j])) == ".." {
			st.lastDot = i
		}
		i = j - 1
	}
	return st.lastDot
}

// isDelimiterAt reports whether a delimiter (other than tab, LF and CR,
// which the WHATWG parser drops) starts at t[i].
func isDelimiterAt(t string, i int) bool {
	c := t[i]
	if c < 0x80 {
		return c != '\t' && c != '\n' && c != '\r' && isDelimiter(rune(c))
	}
	r, _ := utf8.DecodeRuneInString(t[i:])
	return isDelimiter(r)
}
