package aggregator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/upstream"
)

// A server with output_dir (a browser writing page snapshots) links files
// on mcpmux's host in its results, like [Snapshot](../out/page-1.yml),
// which a remote client cannot open. mcpmux rewrites such a link to a
// mcpmux://files/<token>/<name> resource, adds a resource_link item for it,
// and answers resources/read of that URI with the file — only to the client
// session the result went to, as the token is random and bound to it.

// filesScheme starts the URIs of served output files.
const filesScheme = "mcpmux://files/"

// maxFilesPerSession bounds the links a session keeps; older ones are
// forgotten (their reads answer "unknown or expired").
const maxFilesPerSession = 256

// markdownLink matches [text](target) with a target without spaces.
var markdownLink = regexp.MustCompile(`\[([^\]\n]*)\]\(([^()\s]+)\)`)

type outputFile struct {
	ss   *mcp.ServerSession
	dir  string // the server's output_dir, symlinks resolved
	path string // the file, symlinks resolved
}

// outputFiles are the linked files of all sessions, by token: it links
// them in results and serves them. It is given what it needs in New, not
// the Aggregator.
type outputFiles struct {
	stateless bool // see Options.Stateless: no session to bind a link to
	// settings are the current settings: max_result_bytes bounds a read.
	settings func() *config.Settings
	// whenEnded runs f when client session ss has ended (clients.go): a
	// session's links go with it. ctx is as for clientSessions.get.
	whenEnded func(ctx context.Context, ss *mcp.ServerSession, f func())

	mu        sync.Mutex
	byToken   map[string]*outputFile
	bySession map[*mcp.ServerSession][]string // tokens, oldest first
}

// link rewrites the links of res's text items that point into
// the server's output_dir (cwd resolves relative ones) and appends a
// resource_link item per file. Links elsewhere are left as they are.
// since is when the call began, less the granularity of coarse file
// times: older files are not linked (see insideDir).
func (f *outputFiles) link(ctx context.Context, ss *mcp.ServerSession, srv *config.Server, res *mcp.CallToolResult, since time.Time) *mcp.CallToolResult {
	if _, sessionless := ctx.Value(requestFeaturesKey{}).(upstream.ClientFeatures); srv.OutputDir == "" || ss == nil || f.stateless || sessionless {
		return res // no session to bind a link to
	}
	dir, err := filepath.EvalSymlinks(srv.OutputDir)
	if err != nil {
		return res // nothing written there yet, so nothing linked
	}
	base := srv.Cwd
	if base == "" {
		base, _ = os.Getwd()
	}
	var content, links []mcp.Content
	changed := false
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || !strings.Contains(t.Text, "](") {
			content = append(content, c)
			continue
		}
		text := markdownLink.ReplaceAllStringFunc(t.Text, func(m string) string {
			sub := markdownLink.FindStringSubmatch(m)
			file, ok := insideDir(dir, base, sub[2], since)
			if !ok {
				return m
			}
			uri := f.add(ctx, ss, dir, file)
			links = append(links, &mcp.ResourceLink{URI: uri, Name: filepath.Base(file), Title: sub[1], MIMEType: mimeOf(file)})
			return "[" + sub[1] + "](" + uri + ")"
		})
		if text != t.Text {
			changed = true
			c = &mcp.TextContent{Text: text, Meta: t.Meta, Annotations: t.Annotations}
		}
		content = append(content, c)
	}
	if !changed {
		return res
	}
	out := *res
	out.Content = append(content, links...)
	return &out
}

// insideDir resolves target (a link's target) and reports the file it
// names if that is a regular file inside dir written since the call began.
// A relative target is tried against base (the server's cwd), then — as
// @playwright/mcp makes links relative to the client's first root, a path
// that may exist only on the client's machine — with its leading ".."
// dropped, against dir and each of its parents: "../../out/page-1.yml"
// from anywhere names <parent>/out/page-1.yml. Only files written during
// the call qualify, so that text a page controls (which a browser's result
// may quote) cannot name another session's older files.
func insideDir(dir, base, target string, since time.Time) (string, bool) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "#") {
		return "", false
	}
	var candidates []string
	if filepath.IsAbs(target) {
		candidates = append(candidates, target)
	} else {
		candidates = append(candidates, filepath.Join(base, target))
		rest := filepath.Clean(target)
		for rest == ".." || strings.HasPrefix(rest, ".."+string(filepath.Separator)) {
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, ".."), string(filepath.Separator))
		}
		for a := dir; ; a = filepath.Dir(a) {
			candidates = append(candidates, filepath.Join(a, rest))
			if filepath.Dir(a) == a {
				break
			}
		}
	}
	for _, c := range candidates {
		file, err := filepath.EvalSymlinks(c)
		if err != nil || !within(dir, file) {
			continue
		}
		if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(since) {
			return file, true
		}
	}
	return "", false
}

func within(dir, file string) bool {
	rel, err := filepath.Rel(dir, file)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// add records file for session ss and returns its URI; the session's
// links go when it ends.
func (f *outputFiles) add(ctx context.Context, ss *mcp.ServerSession, dir, file string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	f.mu.Lock()
	if f.byToken == nil {
		f.byToken, f.bySession = map[string]*outputFile{}, map[*mcp.ServerSession][]string{}
	}
	first := f.bySession[ss] == nil
	f.byToken[token] = &outputFile{ss: ss, dir: dir, path: file}
	tokens := append(f.bySession[ss], token)
	if len(tokens) > maxFilesPerSession {
		delete(f.byToken, tokens[0])
		tokens = tokens[1:]
	}
	f.bySession[ss] = tokens
	f.mu.Unlock()
	if first {
		f.whenEnded(ctx, ss, func() { f.forget(ss) })
	}
	return filesScheme + token + "/" + path.Base(filepath.ToSlash(file))
}

func (f *outputFiles) forget(ss *mcp.ServerSession) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.bySession[ss] {
		delete(f.byToken, t)
	}
	delete(f.bySession, ss)
}

// middleware answers resources/read of a mcpmux://files/ URI.
func (f *outputFiles) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil && strings.HasPrefix(r.Params.URI, filesScheme) {
			return f.read(r.Session, r.Params.URI)
		}
		return next(ctx, method, req)
	}
}

func (f *outputFiles) read(ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
	token, _, _ := strings.Cut(strings.TrimPrefix(uri, filesScheme), "/")
	f.mu.Lock()
	of := f.byToken[token]
	f.mu.Unlock()
	if of == nil || of.ss != ss {
		// Another session's token is refused as an unknown one, so that
		// an answer tells nothing about other sessions.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown or expired file link; a link is readable only by the client session whose tool result carried it, while that session lasts (the latest %d links of it)", uri, maxFilesPerSession)}
	}
	limit := f.settings().MaxResultBytes
	if limit <= 0 {
		limit = config.DefaultMaxResultBytes
	}
	data, err := readInside(of.dir, of.path, int64(limit))
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", uri, err)}
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeOf(of.path)}
	if isText(rc.MIMEType) && utf8.Valid(data) {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// readInside reads file if it still resolves to a regular file inside dir
// (it may have been replaced by a symlink since it was linked) and has at
// most limit bytes.
func readInside(dir, file string, limit int64) ([]byte, error) {
	resolved, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, fmt.Errorf("the file is gone: %w", err)
	}
	if resolved != file || !within(dir, resolved) {
		return nil, fmt.Errorf("the file now resolves outside the server's output_dir %s, and is not served", dir)
	}
	fh, err := os.Open(resolved)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the file has more than max_result_bytes = %v, and is not served", config.Size(limit))
	}
	return data, nil
}

func mimeOf(file string) string {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".yml", ".yaml":
		return "application/yaml"
	case ".md":
		return "text/markdown"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

func isText(mimeType string) bool {
	t, _, _ := strings.Cut(mimeType, ";")
	return strings.HasPrefix(t, "text/") || t == "application/yaml" || t == "application/json" || strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml")
}
