package fetchserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// Converting HTML costs far more than the page: a parsed element is a node
// of some 200 bytes, and readability scores and copies them, so that a
// hostile page of 10 MiB of tiny nested elements cost 700 MiB and 12
// CPU-seconds. Conversion is therefore bounded three ways:
//
//   - what is converted: at most maxConvertBytes of the page and
//     maxConvertElements elements, the rest cut (the tokenizer that counts
//     them builds no tree); the result says so;
//   - how many at once: one per CPU, the others wait (within their time);
//   - how long: the fetch timeout (--timeout), counted again for the
//     conversion, after which the call gets an error result. (The parser
//     and readability cannot be interrupted: a conversion past its time
//     finishes in the background, holding its place, so that no more than
//     one per CPU ever run.)
var (
	maxConvertBytes    = 4 << 20
	maxConvertElements = 100_000 // a long encyclopedia article has about 40,000
)

// converting limits the conversions running at once.
var converting = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

var errConvertTimeout = errors.New("conversion timed out")

// conversionInput cuts page to what is converted, and reports whether it
// cut.
func conversionInput(page string) (string, bool) {
	cut := false
	if len(page) > maxConvertBytes {
		page, cut = page[:maxConvertBytes], true
	}
	z := html.NewTokenizer(strings.NewReader(page))
	offset, elements := 0, 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken { // io.EOF, or a limit of the tokenizer
			return page, cut
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			if elements++; elements > maxConvertElements {
				return page[:offset], true
			}
		}
		offset += len(z.Raw())
	}
}

// convertWithin converts page within timeout, one conversion per CPU.
func (m *markdowner) convertWithin(ctx context.Context, timeout time.Duration, page string, pageURL *url.URL) (*article, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errConvertTimeout)
	defer cancel()
	select {
	case converting <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waited %v for other conversions to finish", context.Cause(ctx), timeout)
	}
	type done struct {
		a   *article
		err error
	}
	ch := make(chan done, 1)
	go func() {
		defer func() { <-converting }()
		a, err := m.convert(ctx, page, pageURL)
		ch <- done{a, err}
	}()
	select {
	case d := <-ch:
		if d.err != nil && context.Cause(ctx) == errConvertTimeout {
			return nil, fmt.Errorf("%w after %v", errConvertTimeout, timeout)
		}
		return d.a, d.err
	case <-ctx.Done():
		if context.Cause(ctx) == errConvertTimeout {
			return nil, fmt.Errorf("%w after %v", errConvertTimeout, timeout)
		}
		return nil, context.Cause(ctx)
	}
}
