package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/oauth"
	"github.com/kilnmcp/kiln/runtime/version"
)

// loginTimeout bounds how long kiln auth login waits for the browser.
const loginTimeout = 5 * time.Minute

func runAuth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, authUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("kiln auth "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default: $KILN_CONFIG, else ./kiln.yaml)")
	noBrowser := fs.Bool("no-browser", false, "login: print the URL instead of opening a browser")
	var scopes []string
	fs.Func("scope", "login: also ask for these scopes (space separated, repeatable), as a needs_login message after a step-up says", func(v string) error {
		scopes = append(scopes, strings.Fields(v)...)
		return nil
	})
	// Flags may follow the backend name (kiln auth login github --config f).
	var pos []string
	for rest := args[1:]; ; rest = fs.Args()[1:] {
		if fs.Parse(rest) != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
	}
	cfg, err := loadServeConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	st, err := openState(ctx, cfg, nil)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer st.close()
	store := st.tokens(cfg)
	switch args[0] {
	case "status":
		return authStatus(cfg, store, stdout, stderr)
	case "login", "logout":
		if len(pos) != 1 {
			fmt.Fprintf(stderr, "kiln auth %s: name one backend, e.g. kiln auth %s github\n", args[0], args[0])
			return exitUsage
		}
		b := findAuthBackend(cfg, pos[0])
		if b == nil {
			fmt.Fprintf(stderr, "kiln auth %s: no http or sse backend %q with an auth: section in %s\n", args[0], pos[0], cfg.EditHint())
			return exitUsage
		}
		if args[0] == "logout" {
			if err := store.Update(b.Name, func(*oauth.Record) (*oauth.Record, error) { return nil, nil }); err != nil {
				fmt.Fprintf(stderr, "kiln: %v\n", err)
				return exitFail
			}
			fmt.Fprintf(stdout, "logged out of %s; its stored token is deleted\n", b.Name)
			return exitOK
		}
		return authLogin(ctx, cfg, store, b, scopes, !*noBrowser, stdout, stderr)
	}
	fmt.Fprintf(stderr, "kiln auth: unknown command %q\n\n%s", args[0], authUsage)
	return exitUsage
}

const authUsage = `usage: kiln auth <command> [--config FILE]

commands:
  login BACKEND    log in to a backend's OAuth server (opens a browser; --no-browser prints the URL;
                   --scope 'a b' asks for more scopes, as needs_login after a step-up says)
  status           show which backends with auth: have a token
  logout BACKEND   delete a backend's stored token
`

func findAuthBackend(cfg *config.Config, name string) *config.Backend {
	for i := range cfg.Backends {
		if b := &cfg.Backends[i]; b.Name == name && b.Auth != nil && b.Transport != config.TransportStdio {
			return b
		}
	}
	return nil
}

func authStatus(cfg *config.Config, store oauth.TokenStore, stdout, stderr io.Writer) int {
	n := 0
	for _, b := range cfg.Backends {
		if b.Auth == nil {
			continue
		}
		n++
		r, err := store.Load(b.Name)
		switch {
		case err != nil:
			fmt.Fprintf(stdout, "%s: %v\n", b.Name, err)
		case r == nil || r.Token == nil:
			if b.Auth.Grant == config.GrantClientCredentials {
				fmt.Fprintf(stdout, "%s: no token yet (client credentials: kiln gets one on first connect)\n", b.Name)
			} else {
				fmt.Fprintf(stdout, "%s: needs_login; run: kiln auth login %s\n", b.Name, b.Name)
			}
		case r.Token.Valid():
			fmt.Fprintf(stdout, "%s: logged in (%s), token valid %s%s\n", b.Name, r.Grant, until(r.Token.Expiry), refreshNote(r))
		case r.Token.RefreshToken != "":
			fmt.Fprintf(stdout, "%s: logged in (%s), token expired; kiln refreshes it on next use\n", b.Name, r.Grant)
		case r.Grant == config.GrantClientCredentials:
			fmt.Fprintf(stdout, "%s: token expired; kiln gets a new one on next use (client credentials)\n", b.Name)
		default:
			fmt.Fprintf(stdout, "%s: needs_login (token expired, no refresh token); run: kiln auth login %s\n", b.Name, b.Name)
		}
	}
	if n == 0 {
		fmt.Fprintf(stderr, "kiln auth status: no backend in %s has an auth: section\n", cfg.EditHint())
		return exitUsage
	}
	return exitOK
}

func until(t time.Time) string {
	if t.IsZero() {
		return "with no expiry"
	}
	return "until " + t.UTC().Format(time.RFC3339)
}

func refreshNote(r *oauth.Record) string {
	if r.Token.RefreshToken != "" {
		return ", refresh token stored"
	}
	return ""
}

// authLogin runs the authorization code grant with a loopback redirect
// (RFC 8252): it listens on the redirect address, shows the authorization
// URL, waits for the code, then connects once so the backend confirms
// the token works.
func authLogin(ctx context.Context, cfg *config.Config, store oauth.TokenStore, b *config.Backend, scopes []string, browser bool, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	addr, path := "127.0.0.1:0", "/callback"
	if b.Auth.RedirectURL != "" {
		u, _ := url.Parse(b.Auth.RedirectURL) // validated by config
		addr, path = u.Host, u.Path
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "kiln auth login: listen for the redirect on %s: %v; free the port or change auth.redirect_url\n", addr, err)
		return exitFail
	}
	redirect := "http://" + ln.Addr().String() + path
	got := make(chan url.Values, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		select {
		case got <- r.URL.Query():
		default:
		}
		fmt.Fprintln(w, "kiln: authorization received; you can close this tab.")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	authorize := func(ctx context.Context, authURL string) (oauth.Callback, error) {
		fmt.Fprintf(stderr, "Open this URL to authorize kiln for %s:\n\n  %s\n\n", b.Name, authURL)
		if browser {
			if err := openBrowser(authURL); err != nil {
				fmt.Fprintf(stderr, "(no browser opened: %v)\n", err)
			}
		}
		select {
		case q := <-got:
			return oauth.CallbackFromQuery(q)
		case <-ctx.Done():
			return oauth.Callback{}, fmt.Errorf("no authorization arrived at %s within %s", redirect, loginTimeout)
		}
	}
	// A login asks for a new token (the person asked for one) but stores
	// it only once it works: until then the stored token, which a fleet
	// may be using, stays.
	login := oauth.NewLoginStore(store, b.Name)
	mgr := oauth.NewManager(oauth.ManagerOptions{Store: login, Authorize: authorize, RedirectURL: redirect, Scopes: scopes})
	hc, err := mgr.HTTPClient(b)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	// Close runs last: a refresh still in flight when the connection
	// closes must reach the store before the process exits.
	defer mgr.Close()
	conn, err := backend.Dial(ctx, b, backend.Options{ClientName: "kiln", ClientVersion: version.String(), HTTPClient: hc})
	if err != nil {
		fmt.Fprintf(stderr, "kiln auth login %s: %v\n", b.Name, err)
		return exitFail
	}
	defer conn.Close()
	tools, err := conn.ListTools(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "kiln auth login %s: logged in, but listing tools failed: %v\n", b.Name, err)
		return exitFail
	}
	stored, err := login.Commit()
	if err != nil {
		fmt.Fprintf(stderr, "kiln auth login %s: logged in, but storing the token failed: %v\n", b.Name, err)
		return exitFail
	}
	if !stored {
		fmt.Fprintf(stderr, "kiln auth login %s: the backend accepted kiln without asking for authorization; nothing stored\n", b.Name)
		return exitOK
	}
	where := filepath.Join(cfg.Gateway.StateDir, "oauth")
	if cfg.Gateway.StateURL != "" {
		where = "the fleet's shared state (gateway.state_url)"
	}
	fmt.Fprintf(stdout, "logged in to %s (%d tools); token stored under %s\n", b.Name, len(tools), where)
	return exitOK
}

// openBrowser runs $BROWSER (split on spaces, URL appended) or xdg-open.
func openBrowser(u string) error {
	argv := strings.Fields(os.Getenv("BROWSER"))
	if len(argv) == 0 {
		p, err := exec.LookPath("xdg-open")
		if err != nil {
			return errors.New("set BROWSER or install xdg-open")
		}
		argv = []string{p}
	}
	cmd := exec.Command(argv[0], append(argv[1:], u)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
