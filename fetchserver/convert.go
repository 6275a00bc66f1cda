package fetchserver

// HTML to Markdown in two steps, each done by a library:
//
//  1. Main-content extraction with codeberg.org/readeck/go-readability/v2,
//     a line-by-line port of Mozilla's Readability.js (the Firefox reader
//     view), kept in step with Readability.js 0.6. It is the maintained
//     successor of github.com/go-shiori/go-readability, which now marks
//     itself deprecated in favour of it, and it is faster (the fork cut the
//     time and allocations of a large page by half or more).
//  2. Conversion with github.com/JohannesKaufmann/html-to-markdown/v2:
//     CommonMark output with escaping only where needed, nested lists,
//     code blocks, and (with its table plugin) GitHub-style tables, which
//     matter for the fact-finding pages an agent reads. Its converter is
//     safe for concurrent use, so one serves every call.
//
// Readability finds the article on article-shaped pages. On short or
// list-shaped pages it falls back to most of the body, so the page's own
// navigation landmarks are removed first (stripChrome); and when it finds
// no text at all, the whole (stripped) page is converted instead.

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// markdowner converts HTML pages to Markdown of their main content.
type markdowner struct{ conv *converter.Converter }

func newMarkdowner() *markdowner {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			// Anchors without text ("[](#section)") are noise in text.
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(),
		strikethrough.NewStrikethroughPlugin(),
	))
	// The base plugin drops script, style, noscript, iframe, head and form
	// fields; these carry no text worth reading either.
	for _, tag := range []string{"nav", "button", "select", "svg", "template", "dialog"} {
		conv.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityStandard)
	}
	return &markdowner{conv: conv}
}

// article is a converted page.
type article struct {
	title    string
	byline   string // author and date, as readability found them; often not in markdown
	markdown string // the main content
}

// convert extracts the main content of page and converts it to Markdown.
func (m *markdowner) convert(ctx context.Context, page string, pageURL *url.URL) (*article, error) {
	doc, err := parse(page)
	if err != nil {
		return nil, err
	}
	a := &article{title: documentTitle(doc)}

	// ParseAndMutate, not ParseDocument: no copy of a possibly large tree
	// for the rare fallback, which parses the page again instead.
	parser := readability.NewParser()
	found, rerr := parser.ParseAndMutate(doc, pageURL)
	if t := oneLine(found.Title()); t != "" {
		a.title = t // without the " | Site name" that <title> often has
	}
	a.byline = oneLine(found.Byline())
	opts := []converter.ConvertOptionFunc{converter.WithDomain(pageURL.String()), converter.WithContext(ctx)}
	var out []byte
	if rerr == nil && found.Node != nil {
		if out, err = m.conv.ConvertNode(found.Node, opts...); err != nil {
			return nil, fmt.Errorf("converting the article to Markdown: %w", err)
		}
	}
	if len(bytes.TrimSpace(out)) == 0 {
		// Readability found nothing: take the whole page, less its chrome.
		if doc, err = parse(page); err != nil {
			return nil, err
		}
		if out, err = m.conv.ConvertNode(doc, opts...); err != nil {
			return nil, fmt.Errorf("converting the page to Markdown: %w", err)
		}
	}
	a.markdown = strings.TrimSpace(string(out))
	return a, nil
}

// parse parses page and strips its chrome.
func parse(page string) (*html.Node, error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("parsing the HTML: %w", err)
	}
	stripChrome(doc)
	return doc, nil
}

// text is the article as the tool returns it: the title as a heading and
// the byline on top, unless the Markdown already starts with them
// (readability usually drops the title's own h1 and the byline).
func (a *article) text() string {
	var b strings.Builder
	first, _, _ := strings.Cut(a.markdown, "\n")
	if a.title != "" && !(strings.HasPrefix(first, "#") && strings.Contains(first, a.title)) {
		b.WriteString("# " + a.title + "\n\n")
	}
	if a.byline != "" && !strings.Contains(a.markdown, a.byline) {
		b.WriteString(a.byline + "\n\n")
	}
	b.WriteString(a.markdown)
	return b.String()
}

// oneLine collapses whitespace, for metadata that may span lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// stripChrome removes a page's navigation, site header and footer,
// sidebars and inline images before extraction, and the title attributes
// of links (tooltips, which Markdown would repeat after every link).
//
// header, footer and aside are removed only outside article and main, and
// header and footer only outside section too: that is where HTML gives them
// the banner, contentinfo and complementary roles, i.e. where they belong
// to the site rather than to the text. An article's own header (title,
// byline) and footer (notes) stay.
func stripChrome(doc *html.Node) {
	var walk func(n *html.Node, inContent, inSection bool)
	walk = func(n *html.Node, inContent, inSection bool) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode && isChrome(c, inContent, inSection) {
				n.RemoveChild(c)
			} else {
				if c.DataAtom == atom.A {
					c.Attr = slices.DeleteFunc(c.Attr, func(a html.Attribute) bool { return a.Key == "title" })
				}
				switch c.DataAtom {
				case atom.Article, atom.Main:
					walk(c, true, inSection)
				case atom.Section:
					walk(c, inContent, true)
				default:
					walk(c, inContent, inSection)
				}
			}
			c = next
		}
	}
	walk(doc, false, false)
}

func isChrome(n *html.Node, inContent, inSection bool) bool {
	switch n.DataAtom {
	case atom.Nav:
		return true
	case atom.Header, atom.Footer:
		return !inContent && !inSection
	case atom.Aside:
		return !inContent
	case atom.Img:
		// A data: image is kilobytes of base64 in the Markdown and no
		// information for a reader of text.
		return strings.HasPrefix(strings.TrimSpace(attr(n, "src")), "data:")
	}
	switch attr(n, "role") {
	case "navigation", "banner", "contentinfo", "search":
		return true
	}
	return attr(n, "aria-hidden") == "true" || hasAttr(n, "hidden")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

// documentTitle is the text of the first <title>, for when readability
// found none.
func documentTitle(doc *html.Node) string {
	var find func(*html.Node) string
	find = func(n *html.Node) string {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			var b strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			return oneLine(b.String())
		}
		if n.DataAtom == atom.Body {
			return "" // a title belongs in head
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if t := find(c); t != "" {
				return t
			}
		}
		return ""
	}
	return find(doc)
}
