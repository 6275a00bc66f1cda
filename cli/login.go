package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/app"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/upstream"
)

// loginCmd authorizes mcpmux to a server with auth: oauth. It connects to
// the server as a serving mcpmux does, on the same code path, but lets the
// server's OAuth handler run the authorization code flow: the
// authorization URL is printed (and opened in a browser where there is
// one), the code arrives at a loopback redirect, and the tokens are stored
// for every mcpmux that uses the same state directory; a running one picks
// them up within a second.
func loginCmd(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("login", stdout, stderr)
	var cf commonFlags
	cf.register(flags, "error")
	noBrowser := flags.Bool("no-browser", false, "print the authorization URL without opening a browser")
	timeout := flags.Duration("timeout", 5*time.Minute, "how long the whole login may take, the person's part included")
	names, code, ok := parseWithPositionals(flags, args)
	if !ok {
		return code
	}
	if len(names) != 1 {
		return flagError(flags, fmt.Errorf("name one SERVER, not %d", len(names)))
	}
	name := names[0]
	log, mask, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux login:", err)
		return 2
	}
	srv, msg := oauthServer(cf.configDir, name, mask)
	if srv == nil {
		fmt.Fprintln(stderr, "mcpmux login:", msg)
		return 1
	}
	store := app.TokenStore(cf.configDir, log, mask)
	if err := store.Err(); err != nil {
		fmt.Fprintln(stderr, "mcpmux login:", err)
		return 1
	}

	// The person's part counts against the connect timeout of the first
	// attempt, which is all a login makes.
	cfg := *srv
	cfg.ConnectTimeout = *timeout
	pool := upstream.NewPool(&upstream.Options{
		Logger:     log,
		Mask:       mask,
		ClientInfo: &mcp.Implementation{Name: "mcpmux", Version: buildVersion()},
		Tokens:     store,
		Authorize: func(ctx context.Context, server, authURL string) error {
			showAuthorizationURL(stdout, server, authURL, *timeout, !*noBrowser)
			return nil
		},
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool.Apply(ctx, []*config.Server{&cfg}, 0)
	st := pool.Get(name).Status()
	pool.Close(context.Background(), time.Second)
	switch {
	case st.State == upstream.StateUp:
		tools := "tools"
		if st.Tools == 1 {
			tools = "tool"
		}
		fmt.Fprintf(stdout, "Logged in to %s (%d %s). The tokens are in %s; a running mcpmux uses them within a second.\n", name, st.Tools, tools, store.Path(name))
		return 0
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "mcpmux login: interrupted; nothing was stored")
	default:
		fmt.Fprintf(stderr, "mcpmux login: %s: %s\n", name, mask.Mask(st.Error))
		if strings.Contains(st.Error, "registration") && srv.Auth.ClientID == "" {
			fmt.Fprintf(stderr, "If the authorization server does not register clients by itself, register mcpmux with it (redirect URI http://127.0.0.1:PORT/callback) and set auth.client_id and auth.redirect_port in %s.\n", srv.File)
		}
	}
	return 1
}

// logoutCmd deletes the stored tokens of a server, whether or not a tool
// file still names it.
func logoutCmd(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("logout", stdout, stderr)
	var cf commonFlags
	cf.register(flags, "error")
	names, code, ok := parseWithPositionals(flags, args)
	if !ok {
		return code
	}
	if len(names) != 1 {
		return flagError(flags, fmt.Errorf("name one SERVER, not %d", len(names)))
	}
	log, mask, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux logout:", err)
		return 2
	}
	store := app.TokenStore(cf.configDir, log, mask)
	removed, err := store.Remove(names[0])
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "mcpmux logout:", err)
		return 1
	case removed:
		fmt.Fprintf(stdout, "Removed the tokens of %s. A running mcpmux shows it as needs login from its next call.\n", names[0])
	default:
		fmt.Fprintf(stdout, "No tokens are stored for %s (in %s).\n", names[0], store.Dir())
	}
	return 0
}

// oauthServer returns the server called name in the config directory
// dir, if `mcpmux login` applies to it; otherwise nil and a message that
// says why not. It teaches mask the secrets of the config.
func oauthServer(dir, name string, mask *logs.Masker) (*config.Server, string) {
	snap, err := config.Load(dir, nil)
	if err != nil {
		return nil, err.Error()
	}
	app.MaskSecrets(mask, snap)
	var srv *config.Server
	var oauthNames []string
	for _, s := range slices.Concat(snap.Servers, snap.Disabled) {
		if s.Name == name {
			srv = s
		}
		if s.Auth != nil && s.Auth.Type == config.AuthOAuth {
			oauthNames = append(oauthNames, s.Name)
		}
	}
	if srv == nil {
		for _, fe := range snap.Errors {
			if strings.TrimSuffix(strings.TrimSuffix(filepath.Base(fe.File), ".yaml"), ".yml") == name {
				return nil, mask.Mask(fe.Error())
			}
		}
		msg := fmt.Sprintf("no server %q in %s", name, filepath.Join(dir, config.ToolDir))
		if len(oauthNames) > 0 {
			slices.Sort(oauthNames)
			msg += fmt.Sprintf(" (servers with auth: oauth: %s)", strings.Join(oauthNames, ", "))
		}
		return nil, msg
	}
	switch {
	case srv.Auth == nil:
		return nil, fmt.Sprintf("server %s has no auth: section; add \"auth: oauth\" to %s if it requires OAuth", name, srv.File)
	case srv.Auth.Type != config.AuthOAuth:
		return nil, fmt.Sprintf("server %s uses auth: %s, which needs no login", name, srv.Auth.Type)
	}
	return srv, ""
}

// showAuthorizationURL tells the person what to do, and opens the URL in
// a browser if asked and there is one.
func showAuthorizationURL(w io.Writer, server, authURL string, timeout time.Duration, browser bool) {
	redirect := "mcpmux"
	if u, err := url.Parse(authURL); err == nil && u.Query().Get("redirect_uri") != "" {
		redirect = u.Query().Get("redirect_uri")
	}
	fmt.Fprintf(w, "To authorize mcpmux to use %s, open this URL in a browser and approve the access:\n\n  %s\n\nWaiting up to %v for the authorization server to redirect to %s ...\n", server, authURL, timeout, redirect)
	if browser {
		openBrowser(authURL)
	}
}

// openBrowser starts the desktop's browser on u, if there is one; it does
// not wait, and says nothing when there is none (the URL is printed).
func openBrowser(u string) {
	var cmd *exec.Cmd
	switch {
	case os.Getenv("BROWSER") != "":
		cmd = exec.Command(os.Getenv("BROWSER"), u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		cmd = exec.Command("xdg-open", u)
	default:
		return
	}
	if err := cmd.Start(); err == nil {
		go func() { _ = cmd.Wait() }()
	}
}
