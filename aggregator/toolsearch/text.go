package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// words splits s into lower-case words of letters and digits, also at
// case changes, so that "read_file", "read-file" and "readFile" all hold
// "read" and "file" ("HTTPServer" holds "http" and "server").
func words(s string) []string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return unicodeWords(s)
		}
	}
	return asciiWords(s)
}

// asciiWords is words for ASCII text, without decoding runes: tool
// definitions are mostly ASCII, and an index of 10 000 of them splits
// millions of words.
func asciiWords(s string) []string {
	var out []string
	start := -1
	lower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !lower(c) && !upper(c) && !digit(c) {
			flush(i)
			continue
		}
		if start >= 0 && upper(c) {
			prev := s[i-1]
			if lower(prev) || digit(prev) || (upper(prev) && i+1 < len(s) && lower(s[i+1])) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(s))
	return out
}

func unicodeWords(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			// aB splits before B; ABc splits before B (the acronym ends).
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				(unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
}

// stopWords are left out of queries and documents: they say nothing about
// which tool is meant, and a query phrased as a sentence is full of them.
var stopWords = set(`a an and are as at be been but by can could do does for from get has have how i if in into is it its
me my of on or our please should so some than that the their them then there these this those to us use
using was we what when where which while who will with would you your want need let`)

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// contentWords are the words of s without stop words.
func contentWords(s string) []string {
	ws := words(s)
	out := ws[:0]
	for _, w := range ws {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// stemmed is the index term of w's stem. Documents are indexed by their
// words and by their stems, and a query matches a word exactly at full
// weight and by its stem at stemWeight: "files" finds read_file, but
// read_multiple_files, whose description says "files", first.
func stemmed(w string) string { return "~" + stem(w) }

// stem strips the commonest English inflections (plural, -ing, -ed) and a
// few derivations, so that "screenshots", "screenshot" and "taking" meet
// "take" halfway. It is deliberately light: applied alike to queries and
// tools, a wrong stem costs nothing as long as both sides get the same
// one, while an aggressive stemmer merges words that mean different things
// ("organization" and "organ").
func stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5 && !ingWords[w]:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ed") && len(w) > 5 && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:len(w)-2])
	}
	// Noun and agent forms of verbs: "navigation", "extraction", "reader".
	for _, suf := range []string{"ion", "er"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 4 {
			return dropE(w[:len(w)-len(suf)])
		}
	}
	return dropE(w)
}

// ingWords end in "ing" without being a verb's -ing form.
var ingWords = set("string thing nothing something everything anything during spring bring")

// undouble turns "stopp" (of "stopping") into "stop".
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// dropE removes a final e, so that "take" and "tak(ing)", "create" and
// "creat(ed)" meet.
func dropE(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") {
		return w[:len(w)-1]
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
