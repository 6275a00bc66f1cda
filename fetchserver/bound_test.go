package fetchserver

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A hostile page of 10 MiB of tiny elements is converted only up to the
// bound, and the result says so.
func TestHostileHTMLConversionIsBounded(t *testing.T) {
	// Smaller bounds than the defaults, for speed under the race detector;
	// the page is the same.
	defer func(b, e int) { maxConvertBytes, maxConvertElements = b, e }(maxConvertBytes, maxConvertElements)
	maxConvertBytes, maxConvertElements = 1<<20, 10_000
	unit := "<p><a href=/x>y</a>"
	page := "<html><body>" + strings.Repeat(unit, (10<<20)/len(unit)) + "</body></html>"
	srv := serve(t, "text/html", page)
	cs := connect(t, allowLoopback)
	text := mustFetch(t, cs, map[string]any{"url": srv.URL, "max_length": 200})
	if !strings.Contains(text, "<conversion cut: only the first ") || !strings.Contains(text, "raw=true returns the HTML") {
		t.Errorf("no note of the cut conversion: %q", text)
	}
	in, cut := conversionInput(page)
	if !cut || len(in) > maxConvertBytes || strings.Count(in, "<") > 2*maxConvertElements+2 {
		t.Errorf("conversion input: %d bytes, cut %v", len(in), cut)
	}
	if in, cut := conversionInput("<p>short</p>"); cut || in != "<p>short</p>" {
		t.Errorf("a short page was cut: %q", in)
	}
}

// A conversion that outlasts the timeout ends the call with an error that
// says so; its place is given back once it finishes.
func TestConversionTimeout(t *testing.T) {
	m := newMarkdowner()
	u, _ := url.Parse("https://example.com/")
	page := "<html><body>" + strings.Repeat("<div><p>text</p></div>", 20000) + "</body></html>"
	_, err := m.convertWithin(context.Background(), 20*time.Millisecond, page, u)
	if !errors.Is(err, errConvertTimeout) || !strings.Contains(err.Error(), "conversion timed out") {
		t.Fatalf("err %v, want the conversion timeout", err)
	}
	a, err := m.convertWithin(context.Background(), time.Minute, "<html><body><article><p>"+strings.Repeat("word ", 100)+"</p></article></body></html>", u)
	if err != nil || !strings.Contains(a.markdown, "word") {
		t.Errorf("a conversion after it: %v", err)
	}
}
