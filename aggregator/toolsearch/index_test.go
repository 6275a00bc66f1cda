package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"read_file":                     {"read", "file"},
		"browser-take-screenshot":       {"browser", "take", "screenshot"},
		"readFile":                      {"read", "file"},
		"HTTPServer v2":                 {"http", "server", "v2"},
		"tool-searching__google_search": {"tool", "searching", "google", "search"},
		"":                              nil,
	} {
		if got := words(in); !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStemMeetsInflections(t *testing.T) {
	for _, group := range [][]string{
		{"screenshot", "screenshots"},
		{"take", "taking", "takes"},
		{"navigate", "navigation", "navigates", "navigated"},
		{"search", "searches", "searching", "searched"},
		{"file", "files"},
		{"directory", "directories"},
		{"run", "running", "runs"},
		{"extract", "extraction", "extracts"},
		{"embed", "embedded"},
	} {
		want := stem(group[0])
		for _, w := range group[1:] {
			if got := stem(w); got != want {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want the same", w, got, group[0], want)
			}
		}
	}
	for _, w := range []string{"string", "status", "analysis", "need", "user"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

var sample = []Doc{
	{Name: "filesystem__read_text_file", Description: "Read the complete contents of a file from the file system as text.", Server: "filesystem",
		Params: []Param{{Name: "path"}, {Name: "head", Description: "If provided, returns only the first N lines of the file"}}},
	{Name: "filesystem__write_file", Description: "Create a new file or completely overwrite an existing file with new content.", Server: "filesystem",
		Params: []Param{{Name: "path"}, {Name: "content"}}},
	{Name: "filesystem__list_directory", Description: "Get a detailed listing of all files and directories in a specified path.", Server: "filesystem"},
	{Name: "playwright__browser_take_screenshot", Description: "Take a screenshot of the current page.", Server: "playwright"},
	{Name: "playwright__browser_navigate", Description: "Navigate to a URL", Server: "playwright", Params: []Param{{Name: "url", Description: "The URL to navigate to"}}},
	{Name: "fetch__fetch", Description: "Fetches a URL from the internet and extracts its contents as markdown.", Server: "fetch"},
}

func top(t *testing.T, ix *Index, query string) string {
	t.Helper()
	hits := first(ix.Search(query, nil, 0))
	if len(hits) == 0 {
		return ""
	}
	return hits[0].Name
}

func TestSearchRanksTheToolMeant(t *testing.T) {
	ix := Build(sample, Options{}, nil)
	for query, want := range map[string]string{
		"read a file":                     "filesystem__read_text_file",
		"take a picture of the page":      "playwright__browser_take_screenshot",
		"screenshots":                     "playwright__browser_take_screenshot",
		"what is in this folder":          "filesystem__list_directory",
		"go to a website in the browser":  "playwright__browser_navigate",
		"download a web page as markdown": "fetch__fetch",
		"save a new file":                 "filesystem__write_file",
	} {
		if got := top(t, ix, query); got != want {
			t.Errorf("Search(%q) first = %q, want %q (%v)", query, got, want, first(ix.Search(query, nil, 0)))
		}
	}
	if hits := first(ix.Search("the of and", nil, 0)); hits != nil {
		t.Errorf("a query of stop words found %v", hits)
	}
	if hits := first(ix.Search("zebra", nil, 0)); hits != nil {
		t.Errorf("zebra found %v", hits)
	}
}

func TestSearchKeepsOnlyWhatKeepAllows(t *testing.T) {
	ix := Build(sample, Options{}, nil)
	hits, total := ix.Search("file", func(name string) bool { return name != "filesystem__read_text_file" }, 0)
	for _, h := range hits {
		if h.Name == "filesystem__read_text_file" {
			t.Fatalf("kept a document keep refused: %v", hits)
		}
	}
	if len(hits) == 0 || total != len(hits) {
		t.Fatalf("found %v, total %d", hits, total)
	}
}

func TestTiesAreBrokenByName(t *testing.T) {
	var docs []Doc
	for i := range 20 {
		docs = append(docs, Doc{Name: fmt.Sprintf("s%02d__echo", 19-i), Description: "Echoes its text."})
	}
	for range 5 {
		hits, _ := Build(docs, Options{}, nil).Search("echo text", nil, 0)
		if len(hits) != 20 || !slices.IsSortedFunc(hits, func(a, b Hit) int { return cmpName(a.Name, b.Name) }) {
			t.Fatalf("equal documents not in name order: %v", hits)
		}
	}
}

func cmpName(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestBuildReusesUnchangedDocuments(t *testing.T) {
	first := Build(sample, Options{}, nil)
	more := append(slices.Clone(sample), Doc{Name: "late__echo", Description: "Echoes a message back."})
	more[0].Description = "Reads a file as text."
	next := Build(more, Options{}, first)
	if next.docs[1] != first.docs[1] {
		t.Error("an unchanged document was analysed again")
	}
	if next.docs[0] == first.docs[0] {
		t.Error("a changed document kept its old analysis")
	}
	if got := top(t, next, "echo message"); got != "late__echo" {
		t.Errorf("added document not found first: %q", got)
	}
	// Other options analyse anew.
	if plain := Build(more, Options{NoStemming: true}, next); plain.docs[1] == next.docs[1] {
		t.Error("an analysis was reused across options")
	}
}

func first(hits []Hit, _ int) []Hit { return hits }

// A limited search returns the best of the full ranking, in its order,
// and counts every match.
func TestSearchLimitKeepsTheBest(t *testing.T) {
	var docs []Doc
	for i := range 200 {
		docs = append(docs, Doc{Name: fmt.Sprintf("t%03d", i), Description: fmt.Sprintf("Tool %d %s", i, strings.Repeat("page ", i%7))})
	}
	ix := Build(docs, Options{}, nil)
	all, total := ix.Search("tool page", nil, 0)
	for _, limit := range []int{1, 5, 10, 199, 200, 500} {
		got, n := ix.Search("tool page", nil, limit)
		if n != total || !slices.Equal(got, all[:min(limit, len(all))]) {
			t.Errorf("limit %d: %d hits (total %d), want the first %d of %d", limit, len(got), n, limit, total)
		}
	}
}
