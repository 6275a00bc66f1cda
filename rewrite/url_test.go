package rewrite

import (
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"https://huggingface.co/datasets/x", "huggingface.co/datasets/x"},
		{"HTTPS://WWW.HuggingFace.co/datasets/x", "huggingface.co/datasets/x"},
		{"huggingface.co/%64atasets/x", "huggingface.co/datasets/x"},
		{"hf.co/spaces/y", "huggingface.co/spaces/y"},
		{"https://www.hf.co./spaces/y/", "huggingface.co/spaces/y"},
		{"huggingface.co/./datasets/x", "huggingface.co/datasets/x"},
		{"huggingface.co/models/../datasets/x", "huggingface.co/datasets/x"},
		{"huggingface.co/%2e%2E/datasets/x", "huggingface.co/datasets/x"},
		{"huggingface.co//datasets///x//", "huggingface.co/datasets/x"},
		{"huggingface.co/datasets/x?row=1#top", "huggingface.co/datasets/x"},
		{"https://user:pw@huggingface.co:443/datasets/x", "huggingface.co/datasets/x"},
		{"//huggingface.co/datasets/x", "huggingface.co/datasets/x"},
		{"https:huggingface.co/datasets/x", "huggingface.co/datasets/x"},
		{`https:\\huggingface.co\datasets\x`, "huggingface.co/datasets/x"},
		{"huggingface%2Eco/datasets/x", "huggingface.co/datasets/x"},
		{"ｈｕｇｇｉｎｇｆａｃｅ.co/datasets/x", "huggingface.co/datasets/x"},
		{"huggingface。co/datasets/x", "huggingface.co/datasets/x"},
		{"  https://example.com  ", "example.com"},
		{"example.com/a%2fb/%7Euser/%zz", "example.com/a%2Fb/~user/%25zz"},
		{"example.com/a b/", "example.com/a%20b"},
		{"http://[::1]:8080/x", "[::1]/x"},
		{"localhost:3000/api", "localhost/api"},
		// What the WHATWG URL parser ignores: tab, LF, CR anywhere; C0
		// controls and spaces at either end.
		{"https://hugging\nface.co/datasets/x", "huggingface.co/datasets/x"},
		{"ht\ttps://huggingface.co/data\r\nsets/x", "huggingface.co/datasets/x"},
		{"https:/\t/hf.co/%6\n4atasets/x", "huggingface.co/datasets/x"},
		{"\x00\x1f https://huggingface.co/datasets/x\x7f", "huggingface.co/datasets/x%7F"},
		{"\x01huggingface.co/datasets/x\x02 ", "huggingface.co/datasets/x"},
		{"example.com/a\x0bb", "example.com/a%0Bb"},
	} {
		got, ok := NormalizeURL(tt.in)
		if !ok || got != tt.want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	for _, bad := range []string{"", "   ", "https://", "a b.com/x", "exa$mple.com/x", "[::1/x", "...", "\x00\t\n", "hugging\x0bface.co/x"} {
		if got, ok := NormalizeURL(bad); ok {
			t.Errorf("NormalizeURL(%q) = %q, want no URL", bad, got)
		}
	}
}

func TestURLPatterns(t *testing.T) {
	set := mustURLSet(t, "huggingface.co/datasets/**", "https://www.hf.co/spaces/**", "example.org/exact/page", "*.example.net/*/raw")
	for _, tt := range []struct {
		url     string
		matches bool
	}{
		{"huggingface.co/datasets/x", true},
		{"huggingface.co/datasets", true}, // ** matches no segment too
		{"huggingface.co/datasets/org/name/resolve/main/data.json", true},
		{"huggingface.co/spaces/y", true},
		{"huggingface.co/Datasets/X", true}, // case-insensitive
		{"huggingface.co/models/x", false},
		{"huggingface.co", false},
		{"example.com/datasets/x", false},
		{"example.org/exact/page", true},
		{"example.org/exact/page/more", false},
		{"example.org/exact", false},
		{"a.example.net/repo/raw", true},
		{"a.example.net/repo/sub/raw", false},
		{"example.net/repo/raw", false},
	} {
		norm, ok := NormalizeURL(tt.url)
		if !ok {
			t.Fatalf("NormalizeURL(%q) failed", tt.url)
		}
		if got := set.match(norm) != ""; got != tt.matches {
			t.Errorf("match(%q) = %v, want %v", tt.url, got, tt.matches)
		}
	}
}

func TestURLPatternErrors(t *testing.T) {
	for _, tt := range []struct{ pattern, want string }{
		{"/datasets/**", "starts with a host"},
		{"huggingface.co/datasets?x=1", "query and fragment"},
		{"huggingface.co/[datasets/**", "malformed glob"},
		{"[huggingface.co/x", "malformed glob"},
		{"huggingface.co/data**", "whole path segment"},
		{"huggingface.co/../x", `".."`},
	} {
		_, err := compileURLPattern(tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("compileURLPattern(%q) = %v, want an error with %q", tt.pattern, err, tt.want)
		}
	}
}

func TestFindURLs(t *testing.T) {
	set := mustURLSet(t, "huggingface.co/datasets/**", "huggingface.co/spaces/**")
	for _, tt := range []struct {
		text    string
		matches bool
	}{
		{"HTTPS://WWW.HuggingFace.co/datasets/x", true},
		{"huggingface.co/%64atasets/x", true},
		{"hf.co/spaces/y", true},
		{"huggingface.co/./datasets/x", true},
		{"huggingface.co//datasets/x", true},
		{"Please read https://huggingface.co/datasets/gaia-benchmark/GAIA and answer.", true},
		{"see (https://huggingface.co/datasets/x), thanks", true},
		{"[GAIA](https://hf.co/datasets/gaia)", true},
		{"url=https://huggingface.co/datasets/x&y=1", true},
		{"https://r.jina.ai/https://huggingface.co/datasets/x", true},
		{"https://www.google.com/url?q=https%3A%2F%2Fhuggingface.co%2Fdatasets%2Fx", true},
		{"https://a.example/?u=https%253A%252F%252Fhuggingface.co%252Fdatasets%252Fx", true},
		{"mirror:huggingface.co/datasets/x", true},
		{"请看huggingface.co/datasets/x", true},
		{"https://huggingface.co/models/../datasets/x", true},
		{"https://huggingface.co/" + strings.Repeat("a/../", 3000) + "datasets/x", true}, // long: blocked host, fails closed
		{"huggingface.co/models/x", false},
		{"example.com/datasets/x", false},
		{"https://nothuggingface.co/datasets/x", false},
		{"https://huggingface.co.evil.example/datasets/x", false},
		{"the datasets are on huggingface.co", false},
		{"", false},
	} {
		_, p := set.findURLs(tt.text, true)
		if got := p != ""; got != tt.matches {
			t.Errorf("findURLs(%q) matched %q, want match=%v", tt.text, p, tt.matches)
		}
	}
}

func mustURLSet(t testing.TB, patterns ...string) urlSet {
	t.Helper()
	var s urlSet
	for _, raw := range patterns {
		p, err := compileURLPattern(raw)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, p)
	}
	return s
}

// FuzzNormalizeURL: no input panics; a normal form is its own normal
// form; a tab, LF or CR put anywhere changes nothing (the WHATWG parser
// drops them), nor do C0 controls and spaces around the URL; and a URL
// that matches a pattern is refused with such characters in it too.
// Seeds are in testdata/fuzz/FuzzNormalizeURL.
func FuzzNormalizeURL(f *testing.F) {
	f.Add("https://huggingface.co/datasets/x", uint16(8), byte('\n'))
	f.Add("https://hugging\nface.co/datasets/x", uint16(0), byte(0))
	f.Add("hf.co/%64atasets/x", uint16(9), byte('\t'))
	f.Add(" \x00https://huggingface.co/spaces/y\x1f ", uint16(30), byte('\r'))
	set := mustURLSet(f, "huggingface.co/datasets/**", "huggingface.co/spaces/**")
	f.Fuzz(func(t *testing.T, raw string, at uint16, ctl byte) {
		set.findURLs(raw, false) // must not panic
		norm, ok := NormalizeURL(raw)
		if ok {
			again, ok2 := NormalizeURL(norm)
			if !ok2 || again != norm {
				t.Fatalf("not idempotent: %q → %q → %q (ok=%v)", raw, norm, again, ok2)
			}
		}
		// The same URL with a tab or newline inserted, or wrapped in
		// controls, is the same URL.
		i := int(at) % (len(raw) + 1)
		variant := raw[:i] + string(rune("\t\n\r"[int(ctl)%3])) + raw[i:]
		if ctl >= 0x80 {
			variant = string(rune(ctl%0x21)) + raw + string(rune((ctl+7)%0x21))
		}
		vnorm, vok := NormalizeURL(variant)
		if vok != ok || vnorm != norm {
			t.Fatalf("NormalizeURL(%q) = %q, %v but NormalizeURL(%q) = %q, %v", raw, norm, ok, variant, vnorm, vok)
		}
		if ok && set.match(norm) != "" && set.firstMatch(variant) == "" {
			t.Fatalf("%q is blocked (%q) but %q is not found", raw, norm, variant)
		}
	})
}
