package rewrite

import (
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// hostAliases maps hosts to the host whose patterns cover them: short
// links that serve the same pages.
var hostAliases = map[string]string{
	"hf.co": "huggingface.co",
}

// NormalizeURL returns the form of a URL that patterns are matched
// against: "host/segment/segment", without scheme, user info, port, query
// and fragment; the host lowercased (and IDNA-mapped), without "www." and
// trailing dots, with aliases (hf.co) replaced; percent-encoded unreserved
// characters decoded (%64 → d) and other escapes in upper case; "." and
// ".." segments resolved and empty segments (duplicate and trailing
// slashes) dropped. Backslashes count as slashes, as browsers read them.
// First raw is cleaned as the WHATWG URL parser cleans it (see
// WHATWGClean). ok is false if raw has no usable host. The result is its
// own normal form.
func NormalizeURL(raw string) (norm string, ok bool) {
	host, path, ok := splitURL(WHATWGClean(raw))
	if !ok {
		return "", false
	}
	host, ok = normalizeHost(host)
	if !ok {
		return "", false
	}
	segs := normalizePath(path)
	if len(segs) == 0 {
		return host, true
	}
	return host + "/" + strings.Join(segs, "/"), true
}

// splitURL cuts a URL into its authority's host and its path (query and
// fragment dropped). The scheme is optional.
func splitURL(s string) (host, path string, ok bool) {
	authority, rest := splitAuthority(s)
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	host, ok = hostOf(authority)
	return host, strings.ReplaceAll(rest, `\`, "/"), ok
}

// splitAuthority cuts the scheme (if any) off a URL and splits the rest
// into the authority and what follows it. Backslashes count as slashes.
func splitAuthority(s string) (authority, rest string) {
	if i := schemeEnd(s); i > 0 {
		s = s[i:]
	}
	s = strings.TrimLeft(s, `/\`)
	if i := strings.IndexAny(s, `/\?#`); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// hostOf is the host of an authority, without user info and port.
func hostOf(authority string) (string, bool) {
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if strings.HasPrefix(authority, "[") {
		// An IPv6 literal: keep the brackets, drop a port.
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", false
		}
		return authority[:end+1], true
	}
	if i := strings.IndexByte(authority, ':'); i >= 0 {
		authority = authority[:i]
	}
	return authority, authority != ""
}

// schemeEnd returns the length of a leading "scheme:" (with any slashes
// after it), or 0. Only a scheme followed by "//", or http(s) followed by
// anything (browsers read "https:host" as "https://host"), counts: else
// "host:port/path" would lose its host.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			if strings.HasPrefix(s[i+1:], "//") {
				return i + 1
			}
			if scheme := strings.ToLower(s[:i]); scheme == "http" || scheme == "https" {
				return i + 1
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}

// normalizeHost lowercases and canonicalises a host; ok is false for a
// string that cannot be one.
func normalizeHost(h string) (string, bool) {
	if strings.HasPrefix(h, "[") {
		return strings.ToLower(h), true
	}
	h = decodeUnreserved(h)
	if !isASCII(h) {
		a, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return "", false
		}
		h = a
	}
	h = strings.ToLower(h)
	h = strings.TrimRight(h, ".")
	for strings.HasPrefix(h, "www.") {
		h = h[len("www."):]
	}
	if a, ok := hostAliases[h]; ok {
		h = a
	}
	if h == "" {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		if !isHostByte(h[i]) {
			return "", false
		}
	}
	return h, true
}

func isHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// normalizePath splits a path into segments: decoded, without empty and
// dot segments.
func normalizePath(p string) []string {
	var out []string
	for seg := range strings.SplitSeq(p, "/") {
		seg = decodeUnreserved(seg)
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, escapeControls(seg))
		}
	}
	return out
}

// WHATWGClean removes from a URL string what the WHATWG URL parser
// ignores before it parses: ASCII tab, LF and CR anywhere, and C0 control
// characters and spaces at either end. Browsers, Node.js's URL and
// Python's urlsplit all do this, so to a tool built on any of them
// "https://hugging\nface.co/datasets/x" is a page of huggingface.co.
func WHATWGClean(s string) string {
	// Byte by byte: all of these are ASCII, and bytes of invalid UTF-8
	// must stay as they are.
	start, end := 0, len(s)
	for start < end && s[start] <= ' ' {
		start++
	}
	for end > start && s[end-1] <= ' ' {
		end--
	}
	s = s[start:end]
	if !strings.ContainsAny(s, tabOrNewline) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// tabOrNewline are the characters WHATWGClean removes anywhere.
const tabOrNewline = "\t\n\r"

// escapeControls percent-encodes spaces and control characters.
func escapeControls(seg string) string {
	if !strings.ContainsFunc(seg, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return seg
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		if c := seg[i]; c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// decodeUnreserved decodes percent-escapes of unreserved characters
// (letters, digits, "-._~"), writes other escapes in upper case, and
// escapes a "%" that starts no escape, so that decoding again changes
// nothing.
func decodeUnreserved(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(c) {
				b.WriteByte(c)
			} else {
				b.WriteByte('%')
				b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			}
			i += 2
			continue
		}
		b.WriteString("%25")
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
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
	}
	return c - 'A' + 10
}
