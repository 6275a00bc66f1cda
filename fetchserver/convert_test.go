package fetchserver

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestStripChrome(t *testing.T) {
	doc, err := parse(`<html><body>
		<header>SITE-HEADER</header>
		<div role="navigation">ROLE-NAV</div>
		<aside>SITE-ASIDE</aside>
		<main><article>
			<header><h1>Article title</h1><p>ARTICLE-HEADER by someone</p></header>
			<nav>ARTICLE-NAV</nav>
			<p>Text with <a href="/x" title="TOOLTIP">a link</a>. <img src="data:image/png;base64,AAAA" alt="DATA-IMG"><img src="/real.png" alt="REAL-IMG"></p>
			<aside>ARTICLE-ASIDE</aside>
			<span aria-hidden="true">ARIA-HIDDEN</span><div hidden>HIDDEN</div>
			<footer>ARTICLE-FOOTER notes</footer>
		</article></main>
		<section><header>SECTION-HEADER</header></section>
		<footer>SITE-FOOTER</footer>
	</body></html>`)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := html.Render(&b, doc); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, gone := range []string{"SITE-HEADER", "ROLE-NAV", "SITE-ASIDE", "ARTICLE-NAV", "TOOLTIP", "DATA-IMG", "ARIA-HIDDEN", ">HIDDEN", "SITE-FOOTER"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s was kept", gone)
		}
	}
	for _, kept := range []string{"ARTICLE-HEADER", "ARTICLE-ASIDE", "ARTICLE-FOOTER", "SECTION-HEADER", "REAL-IMG", `href="/x"`} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s was removed", kept)
		}
	}
}

func TestConvertFallsBackToWholePage(t *testing.T) {
	// Readability finds no article in a page that is just an image; the
	// page itself still says something.
	u, _ := url.Parse("http://example.test/gallery/")
	a, err := newMarkdowner().convert(t.Context(), `<html><head><title>Gallery</title></head><body><img src="cat.png" alt="A cat"></body></html>`, u)
	if err != nil {
		t.Fatal(err)
	}
	if a.markdown != "![A cat](http://example.test/gallery/cat.png)" || a.title != "Gallery" {
		t.Errorf("got title %q, markdown %q", a.title, a.markdown)
	}
	if got := a.text(); got != "# Gallery\n\n![A cat](http://example.test/gallery/cat.png)" {
		t.Errorf("text() = %q", got)
	}
}
