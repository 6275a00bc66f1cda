package rewrite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// delimiterSpellings are the characters the URL scanner splits text at
// (isDelimiter): ASCII punctuation people put around URLs, spaces (ASCII
// and Unicode), C0 controls, DEL, U+FFFD and bytes of invalid UTF-8. A
// fetcher (WHATWG: browsers, Node; Python requests) keeps each of them in
// the path, percent-encoded or not, so "models<d>/../datasets/x" is
// /datasets/x to it.
func delimiterSpellings() []string {
	var out []string
	for _, c := range `'()[]{}|^"<>` + "` " {
		out = append(out, string(c))
	}
	for c := 0; c < 0x20; c++ {
		out = append(out, string(rune(c)))
	}
	out = append(out, "\x7f", "\u00a0", "\u0085", "\u1680", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufffd", "\xff", "\x80", "\xc3")
	for c := 0x2000; c <= 0x200a; c++ {
		out = append(out, string(rune(c)))
	}
	return out
}

// TestDelimiterDotSegments: a delimiter followed by dot segments does not
// hide a blocked URL, whether the URL is the whole argument, follows a
// proxy, or stands in prose (issue 27, item 1).
func TestDelimiterDotSegments(t *testing.T) {
	r := mustCompile(t, seedRules[:1])
	forms := []string{
		"https://huggingface.co/models%s/../datasets/gaia-benchmark/GAIA",
		"https://r.jina.ai/https://huggingface.co/models%s/../datasets/gaia-benchmark/GAIA",
		"Please read https://huggingface.co/models%s/../datasets/gaia-benchmark/GAIA and answer.",
		`https://huggingface.co/models%s\..\datasets\gaia-benchmark\GAIA`,
		"https://huggingface.co/models%s/%%2e%%2E/datasets/gaia-benchmark/GAIA",
		"https://huggingface.co/a/b%s/../../datasets/gaia-benchmark/GAIA",
	}
	spellings := delimiterSpellings()
	passed, total := 0, 0
	for _, d := range spellings {
		for _, f := range forms {
			total++
			url := fmt.Sprintf(f, d)
			// Go strings carry invalid UTF-8 as it is; json.Marshal would
			// replace it, so build the arguments as a decoded value too.
			args, _ := json.Marshal(map[string]any{"url": url})
			c := call("web__scrape_website", string(args))
			c.decoded, c.decodeOK, c.decodeDone = map[string]any{"url": url}, true, true
			if r.Before(c, nil) == nil {
				passed++
				t.Errorf("%q passes the rule", url)
			}
		}
	}
	t.Logf("%d of %d spellings (%d characters × %d forms) pass", passed, total, len(spellings), len(forms))
	// Allowed pages stay allowed with the same characters around them.
	for _, d := range spellings {
		for _, text := range []string{
			"https://huggingface.co/models" + d + "/x",
			"see https://huggingface.co/models/x" + d + " and ./notes/../y",
		} {
			args, _ := json.Marshal(map[string]string{"url": text}) // a string always encodes
			if r.Before(call("web__scrape_website", string(args)), nil) != nil {
				t.Errorf("%q is refused", text)
			}
		}
	}
}

// TestRedactReadsPastDelimiters: a link that resolves to a blocked page
// past a delimiter is removed up to where it matched.
func TestRedactReadsPastDelimiters(t *testing.T) {
	r := mustCompile(t, seedRules)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see https://huggingface.co/models'/../datasets/gaia now, or https://huggingface.co/models/x (a/../b)"}}}
	got := ResultText(r.After(context.Background(), call("search__google_search", `{}`), res, nil))
	want := "[Rewrite rule 'no-benchmark-links' removed 1 link(s) to blocked pages from this result] see [link removed] now, or https://huggingface.co/models/x (a/../b)"
	if got != want {
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
}
