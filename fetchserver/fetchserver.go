// Package fetchserver is mcpmux's built-in URL-to-Markdown engine: an MCP
// server with one tool, fetch, that reads a web page over HTTP(S) and
// returns its main content as Markdown.
//
// It is there so that a configuration always has a way to read a page,
// for example as the fallback of a scraping tool that failed (MiroFlow, the
// seed of mcpmux, used MarkItDown for this). It runs no JavaScript: a page
// that builds its text in the browser needs a browser tool.
//
// Every failure (a bad URL, a refused address, DNS, a refused connection,
// a timeout, an HTTP error, an unsupported content type) is a tool result
// with isError set and a message saying what went wrong and what to do,
// never a protocol error: the caller is usually a model, and a model can
// act on a message.
package fetchserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/rewrite"
)

// Defaults of Options and of the tool's arguments.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxBytes  = 10 << 20 // 10 MiB
	DefaultMaxLength = 20000    // characters per result
)

// Options configure the fetch server. The zero value (or nil) gives the
// defaults.
type Options struct {
	// Timeout bounds one fetch as a whole: connecting, every redirect, and
	// reading the body. Zero (or less) means DefaultTimeout.
	Timeout time.Duration
	// MaxBytes caps how much of a response body is read; the rest is left
	// unread and the result says so. Zero (or less) means DefaultMaxBytes.
	MaxBytes int64
	// AllowPrivateNetworks lets fetch reach loopback and private-network
	// addresses (127.0.0.0/8, 10.0.0.0/8, 192.168.0.0/16, fc00::/7, …).
	// False refuses them, so that a model cannot be steered into reading
	// services on the host's network. Link-local addresses and cloud
	// metadata services are refused either way.
	AllowPrivateNetworks bool
	// Version is the server's version, sent in its MCP implementation info
	// and in the User-Agent "mcpmux-fetch/<Version>". Empty means "dev".
	Version string
	// Logger receives one line per fetch, and the SDK's logs (its Info
	// demoted to Debug). Nil discards.
	Logger *slog.Logger
}

func (o *Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o *Options) maxBytes() int64 {
	if o.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return o.MaxBytes
}

func (o *Options) version() string {
	if o.Version == "" {
		return "dev"
	}
	return o.Version
}

// New returns an MCP server with the fetch tool. Run it on any transport,
// e.g. server.Run(ctx, &mcp.StdioTransport{}).
func New(opts *Options) *mcp.Server {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &tool{fetcher: newFetcher(opts), md: newMarkdowner(), log: log}
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpmux-fetch", Title: "mcpmux fetch", Version: opts.version()}, &mcp.ServerOptions{
		Logger:       logs.QuietInfo(log),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	server.AddTool(toolDef, t.handle)
	return server
}

// toolDef is the fetch tool as listed. Server.AddTool (not the generic
// mcp.AddTool) so that parseArgs, not a schema validator, words the
// messages for bad arguments.
var toolDef = &mcp.Tool{
	Name:  "fetch",
	Title: "Fetch a web page",
	Description: "Fetch a URL over HTTP(S) and return the main content of the page as Markdown " +
		"(navigation, scripts and styles removed), or text files as they are. " +
		"Long content comes in parts of max_length characters: a result that ends with " +
		"<content truncated: … start_index=N …> continues when called again with start_index=N. " +
		"raw=true returns the page unconverted (e.g. the HTML source). " +
		"JavaScript is not run; images, PDFs and other binary files are not supported.",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"url": map[string]any{
				"type":        "string",
				"description": "The http:// or https:// URL to fetch.",
			},
			"max_length": map[string]any{
				"type":        "integer",
				"minimum":     1,
				"default":     DefaultMaxLength,
				"description": "Most characters to return in this call.",
			},
			"start_index": map[string]any{
				"type":        "integer",
				"minimum":     0,
				"default":     0,
				"description": "Character offset to start at, to read the next part of long content.",
			},
			"raw": map[string]any{
				"type":        "boolean",
				"default":     false,
				"description": "Return the content as the server sent it, without converting HTML to Markdown.",
			},
		},
		"required":             []string{"url"},
		"additionalProperties": false,
	},
	Annotations: &mcp.ToolAnnotations{
		ReadOnlyHint:  true,
		OpenWorldHint: new(true),
	},
}

type tool struct {
	fetcher *fetcher
	md      *markdowner
	log     *slog.Logger
}

// args are the fetch tool's arguments.
type args struct {
	URL        string
	MaxLength  int
	StartIndex int
	Raw        bool
}

func (t *tool) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req.Params.Arguments)
	if err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return errorResult("Invalid URL: %q is not a URL (%v). Give a full URL such as https://example.com/page.", a.URL, unwrapURLError(err)), nil
	}
	if err := checkURL(u, t.fetcher.allowPrivate); err != nil {
		t.log.Info("fetch refused", "url", a.URL, "reason", err)
		return errorResult("%s", t.fetcher.describe(err, a.URL)), nil
	}
	// The refusals of mcpmux's rules for this call (see
	// rewrite.RefusalsMetaKey): every redirect target is held to them.
	rules, err := rewrite.ParseRefusals(req.Params.Meta)
	if err != nil {
		return errorResult("Invalid _meta: %v. It is set by mcpmux; a client calling this server directly can leave it out.", err), nil
	}
	if r := rules.Blocked(u.String()); r != nil {
		t.log.Info("fetch refused by a rule", "url", a.URL, "rule", r.Rule)
		return errorResult("%s", r.Message), nil
	}

	start := time.Now()
	resp, err := t.fetcher.get(withRules(ctx, rules), u)
	if err != nil {
		msg := t.fetcher.describe(err, u.String())
		t.log.Info("fetch failed", "url", u.String(), "error", err, "duration", time.Since(start).Round(time.Millisecond))
		return errorResult("%s", msg), nil
	}
	t.log.Info("fetched", "url", u.String(), "final_url", resp.url.String(), "status", resp.status,
		"type", resp.mediaType, "bytes", len(resp.text), "cut", resp.cut, "duration", time.Since(start).Round(time.Millisecond))

	content := resp.text
	var input string // the part converted, when it was cut
	if resp.kind == kindHTML && !a.Raw {
		converted, cut := conversionInput(resp.text)
		if cut {
			input = converted
		}
		page, err := t.md.convertWithin(ctx, t.fetcher.timeout, converted, resp.url)
		if err != nil {
			return errorResult("Fetched %s but could not convert it: %v. Call again with raw=true for the HTML as it is.", resp.url, err), nil
		}
		if page.markdown == "" {
			return errorResult("Fetched %s, but the page has no readable text: it may build its content with JavaScript, which this tool does not run. Try a browser tool, or raw=true for the HTML source.", resp.url), nil
		}
		content = page.text()
	}
	if strings.TrimSpace(content) == "" {
		content = fmt.Sprintf("(The response from %s was empty: HTTP %d %s, no content.)", resp.url, resp.status, http.StatusText(resp.status))
	}
	if resp.url.String() != u.String() {
		content = "Redirected to: " + resp.url.String() + "\n\n" + content
	}
	text, err := window(content, a.StartIndex, a.MaxLength)
	if err != nil {
		return errorResult("%v. Call with a smaller start_index (0 for the beginning).", err), nil
	}
	if input != "" {
		text += fmt.Sprintf("\n\n<conversion cut: only the first %d bytes of the page were converted (the bound is %s or %d elements); raw=true returns the HTML as it is>", len(input), formatBytes(int64(maxConvertBytes)), maxConvertElements)
	}
	if resp.cut {
		text += fmt.Sprintf("\n\n<response cut at %s: the page is longer than the size limit, and the rest was not read>", formatBytes(t.fetcher.maxBytes))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// window returns maxLen characters (runes, not bytes) of content from
// start, with a closing note when there is more.
func window(content string, start, maxLen int) (string, error) {
	total := utf8.RuneCountInString(content)
	if start > 0 && start >= total {
		return "", fmt.Errorf("start_index=%d is past the end: the content has %d characters", start, total)
	}
	from := runeOffset(content, 0, start)
	to := runeOffset(content, from, maxLen)
	out := content[from:to]
	if to < len(content) {
		next := start + maxLen
		out += fmt.Sprintf("\n\n<content truncated: %d characters in all; call again with start_index=%d to read more>", total, next)
	}
	return out, nil
}

// runeOffset is the byte offset n runes after byte offset from, or
// len(s).
func runeOffset(s string, from, n int) int {
	i := from
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// parseArgs decodes and checks the arguments by hand, so that every
// mistake gets a message naming the argument and what it should be.
// Integers may arrive as 20000, 20000.0 or "20000", and booleans as true
// or "true": models send all of these.
func parseArgs(raw json.RawMessage) (args, error) {
	a := args{MaxLength: DefaultMaxLength}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return a, errors.New(`the arguments must be a JSON object, e.g. {"url": "https://example.com/page"}`)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		if string(bytes.TrimSpace(v)) == "null" {
			continue // as if left out
		}
		var err error
		switch k {
		case "url":
			if json.Unmarshal(v, &a.URL) != nil {
				err = fmt.Errorf("url must be a string, got %s", v)
			}
		case "max_length":
			if a.MaxLength, err = intArg(k, v); err == nil && a.MaxLength < 1 {
				err = fmt.Errorf("max_length must be at least 1, got %d", a.MaxLength)
			}
		case "start_index":
			if a.StartIndex, err = intArg(k, v); err == nil && a.StartIndex < 0 {
				err = fmt.Errorf("start_index must be 0 or more, got %d", a.StartIndex)
			}
		case "raw":
			a.Raw, err = boolArg(k, v)
		default:
			err = fmt.Errorf("unknown argument %q: fetch takes url, max_length, start_index and raw", k)
		}
		if err != nil {
			return a, err
		}
	}
	if strings.TrimSpace(a.URL) == "" {
		return a, errors.New(`url is required: the http:// or https:// address of the page, e.g. {"url": "https://example.com/page"}`)
	}
	return a, nil
}

func intArg(name string, v json.RawMessage) (int, error) {
	num := string(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		num = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f != float64(int(f)) || f > 1<<40 || f < -(1<<40) {
		return 0, fmt.Errorf("%s must be a whole number, got %s", name, v)
	}
	return int(f), nil
}

func boolArg(name string, v json.RawMessage) (bool, error) {
	str := string(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		str = strings.ToLower(strings.TrimSpace(s))
	}
	b, err := strconv.ParseBool(str)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, got %s", name, v)
	}
	return b, nil
}

func errorResult(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// unwrapURLError drops url.Error's repetition of the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// formatBytes writes n in the largest binary unit that keeps it whole.
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
