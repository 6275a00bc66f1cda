package rewrite

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// urlPattern matches normalised URLs: a host glob and one glob per path
// segment, where "**" stands for any number of segments (none included).
// Matching ignores case.
type urlPattern struct {
	raw         string
	host        string
	literalHost bool // host has no glob characters: compare, do not match
	segs        []string
}

// compileURLPattern reads a block_urls entry such as
// "huggingface.co/datasets/**", normalised like the URLs it matches.
func compileURLPattern(raw string) (urlPattern, error) {
	s := WHATWGClean(raw)
	if i := schemeEnd(s); i > 0 {
		s = s[i:]
	}
	s = strings.ReplaceAll(s, `\`, "/")
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return urlPattern{}, fmt.Errorf("%q: a pattern starts with a host, e.g. huggingface.co/datasets/**", raw)
	}
	s = strings.TrimLeft(s, "/")
	if strings.ContainsAny(s, "?#") {
		return urlPattern{}, fmt.Errorf("%q: a pattern matches host and path; query and fragment are ignored, so leave them out", raw)
	}
	host, rest, _ := strings.Cut(s, "/")
	host = strings.ToLower(strings.TrimRight(host, "."))
	for strings.HasPrefix(host, "www.") {
		host = host[len("www."):]
	}
	if a, ok := hostAliases[host]; ok {
		host = a
	}
	if host == "" {
		return urlPattern{}, fmt.Errorf("%q: a pattern starts with a host, e.g. huggingface.co/datasets/**", raw)
	}
	if err := checkGlob(host); err != nil {
		return urlPattern{}, fmt.Errorf("%q: host %q: %v", raw, host, err)
	}
	p := urlPattern{raw: raw, host: host, literalHost: !strings.ContainsAny(host, `*?[\`)}
	for seg := range strings.SplitSeq(rest, "/") {
		seg = strings.ToLower(decodeUnreserved(seg))
		switch {
		case seg == "" || seg == ".":
			continue
		case seg == "..":
			return urlPattern{}, fmt.Errorf("%q: a pattern cannot contain \"..\"", raw)
		case seg != "**" && strings.Contains(seg, "**"):
			return urlPattern{}, fmt.Errorf("%q: \"**\" must be a whole path segment (it matches any number of segments)", raw)
		}
		if err := checkGlob(seg); err != nil {
			return urlPattern{}, fmt.Errorf("%q: segment %q: %v", raw, seg, err)
		}
		p.segs = append(p.segs, escapeControls(seg))
	}
	return p, nil
}

// checkGlob reports a malformed glob (an unclosed "[", a trailing "\").
func checkGlob(g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return errors.New("malformed glob")
	}
	return nil
}

// matchHost reports whether a normalised host matches.
func (p *urlPattern) matchHost(host string) bool {
	if p.literalHost {
		return host == p.host
	}
	ok, _ := path.Match(p.host, host)
	return ok
}

// match reports whether a normalised URL matches.
func (p *urlPattern) match(norm string) bool {
	norm = strings.ToLower(norm)
	host, rest, _ := strings.Cut(norm, "/")
	if !p.matchHost(host) {
		return false
	}
	var segs []string
	if rest != "" {
		segs = strings.Split(rest, "/")
	}
	return matchSegments(p.segs, segs)
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := len(segs); i >= 0; i-- {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// urlSet is the block_urls of one rule.
type urlSet []urlPattern

// matchHost reports whether any pattern could match a URL on host.
func (s urlSet) matchHost(host string) bool {
	for i := range s {
		if s[i].matchHost(host) {
			return true
		}
	}
	return false
}

// match returns the pattern a normalised URL matches, or "".
func (s urlSet) match(norm string) string {
	for i := range s {
		if s[i].match(norm) {
			return s[i].raw
		}
	}
	return ""
}
