package fetchserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/mcpmux/mcpmux/rewrite"
)

// maxRedirects is how many redirects one fetch follows.
const maxRedirects = 10

// fetcher does the HTTP side of a fetch: policy, limits, and errors that
// say what went wrong.
type fetcher struct {
	client       *http.Client
	timeout      time.Duration
	maxBytes     int64
	userAgent    string
	allowPrivate bool
}

func newFetcher(o *Options) *fetcher {
	g := dialPolicy{allowPrivate: o.AllowPrivateNetworks}
	dialer := &net.Dialer{Control: g.control, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		// No proxy, not even from the environment: the dial policy checks the
		// address dialed, and through a proxy that would be the proxy's,
		// not the target's.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		// Deadlines come from the context of each fetch (Options.Timeout),
		// which covers dialing, TLS, redirects and reading the body.
	}
	return &fetcher{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > maxRedirects {
					return errTooManyRedirects
				}
				if r := rulesOf(req.Context()).Blocked(req.URL.String()); r != nil {
					return &ruleError{refusal: r, from: via[len(via)-1].URL.String(), to: req.URL.String()}
				}
				return checkURL(req.URL, o.AllowPrivateNetworks)
			},
		},
		timeout:      o.timeout(),
		maxBytes:     o.maxBytes(),
		userAgent:    "mcpmux-fetch/" + o.version(),
		allowPrivate: o.AllowPrivateNetworks,
	}
}

// rulesKey is the context key of the rules a fetch's redirects are held to.
type rulesKey struct{}

// withRules returns ctx carrying the rules of a fetch.
func withRules(ctx context.Context, rules *rewrite.URLBlocker) context.Context {
	return context.WithValue(ctx, rulesKey{}, rules)
}

// rulesOf returns the rules of a fetch's context; nil blocks nothing.
func rulesOf(ctx context.Context) *rewrite.URLBlocker {
	b, _ := ctx.Value(rulesKey{}).(*rewrite.URLBlocker)
	return b
}

// ruleError is a redirect to a URL that one of mcpmux's rules refuses.
type ruleError struct {
	refusal  *rewrite.Refusal
	from, to string
}

func (e *ruleError) Error() string {
	return fmt.Sprintf("%s redirected to %s, which rule %q refuses", e.from, e.to, e.refusal.Rule)
}

// kind is how fetch treats a media type.
type kind int

const (
	kindUnsupported kind = iota
	kindHTML
	kindText
)

// response is a fetched body, decoded to UTF-8.
type response struct {
	url       *url.URL // after redirects
	status    int
	mediaType string
	kind      kind
	text      string
	// cut is true when the body was longer than maxBytes and only the
	// first maxBytes were read.
	cut bool
}

var (
	errTooManyRedirects = fmt.Errorf("stopped after %d redirects", maxRedirects)
	errFetchTimeout     = errors.New("fetch timed out")
)

// statusError is an HTTP response outside 2xx.
type statusError struct {
	code       int
	retryAfter string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// typeError is a response of a media type fetch does not convert.
type typeError struct{ mediaType string }

func (e *typeError) Error() string {
	return fmt.Sprintf("content type %s is not supported", e.mediaType)
}

// get fetches u and returns its body as text, or an error of one of the
// types above, or a transport error; describe turns any of them into a
// message for the caller.
func (f *fetcher) get(ctx context.Context, u *url.URL) (*response, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout, errFetchTimeout)
	defer cancel()
	res, err := f.do(ctx, u)
	if err != nil && context.Cause(ctx) == errFetchTimeout {
		return nil, errFetchTimeout
	}
	return res, err
}

func (f *fetcher) do(ctx context.Context, u *url.URL) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &urlError{fmt.Sprintf("%q is not a URL fetch can request: %v", u.String(), err)}
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,text/*;q=0.8,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &statusError{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	}

	ct := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(ct)
	mediaType = strings.ToLower(mediaType)
	k := kindOf(mediaType)
	if k == kindUnsupported && !sniffable(mediaType) {
		return nil, &typeError{mediaType: mediaType}
	}

	// Read at most maxBytes, and one more to know whether there was more.
	// The transport has already undone any gzip, so the cap is on what we
	// hold in memory, and a compressed bomb stops at it too.
	body := bufio.NewReaderSize(io.LimitReader(resp.Body, f.maxBytes+1), 512)
	if k == kindUnsupported {
		// No type, or a generic one: the first bytes tell, as they tell a
		// browser (net/http's sniffing is the WHATWG algorithm).
		head, err := body.Peek(512)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, fmt.Errorf("reading the response body: %w", err)
		}
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(head))
		if k = kindOf(sniffed); k == kindUnsupported {
			declared := mediaType
			if declared == "" {
				declared = "(none declared)"
			}
			return nil, &typeError{mediaType: fmt.Sprintf("%s, whose bytes look like %s,", declared, sniffed)}
		}
		mediaType = sniffed
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("reading the response body: %w", err)
	}
	cut := int64(len(data)) > f.maxBytes
	if cut {
		data = data[:f.maxBytes]
	}
	return &response{
		url:       resp.Request.URL,
		status:    resp.StatusCode,
		mediaType: mediaType,
		kind:      k,
		text:      decode(data, ct),
		cut:       cut,
	}, nil
}

// kindOf classifies a media type. Text-like application types (JSON, XML,
// JavaScript, YAML, …) are text; every image is unsupported, SVG included;
// text/event-stream is a stream that never ends, not a page.
func kindOf(mediaType string) kind {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return kindHTML
	case mediaType == "text/event-stream":
		return kindUnsupported
	case strings.HasPrefix(mediaType, "text/"):
		return kindText
	case strings.HasPrefix(mediaType, "application/"):
		sub := strings.TrimPrefix(mediaType, "application/")
		switch {
		case strings.HasSuffix(sub, "+json"), strings.HasSuffix(sub, "+xml"):
			return kindText
		}
		switch sub {
		case "json", "xml", "javascript", "ecmascript", "x-javascript", "yaml", "x-yaml",
			"toml", "x-sh", "sql", "graphql", "x-ndjson", "ndjson", "csv", "x-tex", "x-latex":
			return kindText
		}
	}
	return kindUnsupported
}

// sniffable reports whether a type says nothing about the content, so the
// bytes are worth a look.
func sniffable(mediaType string) bool {
	return mediaType == "" || mediaType == "application/octet-stream" || mediaType == "binary/octet-stream"
}

// decode returns body as UTF-8. A charset the server declared (header or
// byte-order mark) wins; otherwise a body that is valid UTF-8 is taken as
// such, and anything else is decoded as the HTML rules guess (a <meta>
// charset, else windows-1252).
func decode(body []byte, contentType string) string {
	enc, _, certain := charset.DetermineEncoding(body, contentType)
	if !certain && utf8.Valid(body) {
		return string(body)
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return string(bytes.TrimPrefix(out, []byte("\uFEFF")))
}

// describe turns a fetch error into a message that says what went wrong
// and what to do about it.
func (f *fetcher) describe(err error, rawURL string) string {
	var (
		refused  *refusedError
		badURL   *urlError
		status   *statusError
		badType  *typeError
		dnsErr   *net.DNSError
		certErr  *tls.CertificateVerificationError
		hostErr  x509.HostnameError
		authErr  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		recHdErr tls.RecordHeaderError
	)
	var byRule *ruleError
	switch {
	case errors.As(err, &byRule):
		// The rule's own message, as for a call mcpmux refused itself.
		return fmt.Sprintf("%s [Not fetched: %s redirected to %s, which rule '%s' refuses.]", byRule.refusal.Message, byRule.from, byRule.to, byRule.refusal.Rule)
	case errors.As(err, &badURL):
		return "Invalid URL: " + badURL.msg + "."
	case errors.As(err, &refused):
		msg := fmt.Sprintf("Refused to fetch %s: %s is %s.", rawURL, refused.host, refused.why)
		if refused.private {
			return msg + " This fetch server does not reach loopback or private networks; use a public URL (whoever runs the server can allow private networks with --allow-private-networks)."
		}
		return msg + " Such addresses are never fetched; use a public URL."
	case errors.Is(err, errFetchTimeout):
		return fmt.Sprintf("Timed out after %s fetching %s: the server did not send the whole page in time. Try again later, or try another source.", f.timeout, rawURL)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("The fetch of %s was cancelled.", rawURL)
	case errors.Is(err, errTooManyRedirects):
		return fmt.Sprintf("Fetching %s stopped after %d redirects: the site redirects in a loop or too often. Check the URL, or try the page's final address.", rawURL, maxRedirects)
	case errors.As(err, &status):
		return fmt.Sprintf("HTTP %d %s from %s: %s", status.code, http.StatusText(status.code), rawURL, statusHint(status))
	case errors.As(err, &badType):
		return fmt.Sprintf("Cannot fetch %s: content type %s is not supported. This tool returns web pages and text only; images, PDFs, audio, video and other binary files need a tool that handles them.", rawURL, badType.mediaType)
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("Cannot resolve host %q: no such host. Check the spelling of the URL.", dnsErr.Name)
		}
		return fmt.Sprintf("Cannot resolve host %q: %s. The name service failed; try again later.", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("Connection refused by %s: nothing is listening at that address and port. Check the URL, or try again later.", peer(err, rawURL))
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Sprintf("The connection to %s was closed before the page was complete. Try again; if it keeps happening, the site may block automated clients.", peer(err, rawURL))
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("Cannot reach %s: no route to that network. Check the URL; the site may be down.", peer(err, rawURL))
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &authErr), errors.As(err, &invalid):
		return fmt.Sprintf("The TLS certificate of %s is not valid (%v). The page cannot be fetched securely; do not work around this, find another source.", peer(err, rawURL), err)
	case errors.As(err, &recHdErr):
		return fmt.Sprintf("TLS handshake with %s failed: the server does not speak HTTPS on that port. Try the http:// URL if the site has one.", peer(err, rawURL))
	}
	return fmt.Sprintf("Fetching %s failed: %v.", rawURL, err)
}

// statusHint says what to do after an HTTP error status.
func statusHint(e *statusError) string {
	switch {
	case e.code == http.StatusNotFound || e.code == http.StatusGone:
		return "the page does not exist. Check the URL, or search for the page's current address."
	case e.code == http.StatusUnauthorized || e.code == http.StatusForbidden:
		return "the site refuses access (it may need a login, or block automated clients). Try another source."
	case e.code == http.StatusTooManyRequests:
		if e.retryAfter != "" {
			return fmt.Sprintf("the site is rate-limiting requests (Retry-After: %s). Wait before trying again.", e.retryAfter)
		}
		return "the site is rate-limiting requests. Wait before trying again."
	case e.code >= 500:
		return "the server failed. Try again later, or try another source."
	case e.code >= 300 && e.code < 400:
		return "a redirect without a usable Location. Try the page's final address."
	}
	return "the server did not return the page. Check the URL."
}

// peer names the address a network error is about: the one dialed (which
// may be a redirect target's), else the host and port of rawURL.
func peer(err error, rawURL string) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return op.Addr.String()
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if strings.EqualFold(u.Scheme, "https") {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
