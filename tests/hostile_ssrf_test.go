//go:build e2e

package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// notRegistered is what a client hears for every HTTP or SSE registration
// that fails, whatever answered (or did not).
const notRegistered = `register_manual: backend "int1" could not be registered: the address is not allowed or did not answer as an MCP server; check the URL, or ask kiln's operator to allow the host in gateway.registration.allow_hosts`

// ssrfToken is kiln's bearer token in these tests, set the way operators
// do: KILN_HTTP_TOKEN in kiln's environment, referenced by the config.
const ssrfToken = "kiln-e2e-http-token-5cb1f0"

// ssrfKiln is `kiln serve --http 127.0.0.1:0` with a client and its log.
type ssrfKiln struct {
	t    *testing.T
	base string // http://127.0.0.1:PORT
	c    *mcpclient.Client
	mu   sync.Mutex
	log  strings.Builder
}

func (k *ssrfKiln) logged() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.log.String()
}

// startSSRFKiln runs kiln over HTTP on a config whose gateway.registration
// section gets extra lines, with KILN_HTTP_TOKEN and SECRET_X in its
// environment, and a stdio fault server "envb" with one configured
// variable.
func startSSRFKiln(t *testing.T, registration string) *ssrfKiln {
	t.Helper()
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 3s
  http:
    auth_token: ${KILN_HTTP_TOKEN}
  registration:
    max_backends: 20
%sbackends:
  envb:
    command: %s
    env: {CONFIGURED_X: "set in kiln.yaml"}
`, t.TempDir(), registration, faultBin(t))
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kilnBin(t), "serve", "--http", "127.0.0.1:0", "--config", path)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "KILN_HTTP_TOKEN="+ssrfToken, "SECRET_X=planted-secret-x")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	k := &ssrfKiln{t: t}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			t.Log("kiln: " + line)
			k.mu.Lock()
			k.log.WriteString(line + "\n")
			k.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		close(urls)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatal("kiln serve --http exited before listening; its stderr is logged above")
		}
		k.base = u
	case <-time.After(30 * time.Second):
		t.Fatal("kiln serve --http did not report its address within 30s")
	}
	c, err := mcpclient.NewStreamableHttpClient(k.base+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + ssrfToken}))
	if err != nil {
		t.Fatal(err)
	}
	k.c = c
	startMCPGo(t, c)
	return k
}

func (k *ssrfKiln) call(tool string, args map[string]any) result {
	k.t.Helper()
	res, err := k.c.CallTool(k.t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		k.t.Fatalf("%s: %v", tool, err)
	}
	r, err := toResult(res.Content, res.StructuredContent, res.IsError)
	if err != nil {
		k.t.Fatal(err)
	}
	return r
}

func (k *ssrfKiln) register(name string, def map[string]any) result {
	k.t.Helper()
	tpl := map[string]any{"name": name}
	for key, v := range def {
		tpl[key] = v
	}
	return k.call("register_manual", map[string]any{"manual_call_template": tpl})
}

func (k *ssrfKiln) backends() string {
	k.t.Helper()
	res, err := k.c.ReadResource(k.t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "kiln://backends"}})
	if err != nil {
		k.t.Fatal(err)
	}
	var out []string
	for _, c := range res.Contents {
		if tc, ok := c.(mcpgo.TextResourceContents); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in %q", rawURL)
	}
	return u.Port()
}

// expectRefused registers each target as int1, int2, … and requires the
// one uniform refusal, nothing registered, and the reason in kiln's log.
func expectRefused(t *testing.T, k *ssrfKiln, targets []struct {
	name string
	def  map[string]any
}) {
	t.Helper()
	before := strings.Count(k.logged(), "runtime registration failed")
	for i, tc := range targets {
		name := fmt.Sprintf("int%d", i+1)
		start := time.Now()
		r := k.register(name, tc.def)
		t.Logf("%s (%s), %s: %s", tc.name, name, time.Since(start).Round(time.Millisecond), firstLine(r.Text()))
		if want := strings.Replace(notRegistered, `"int1"`, `"`+name+`"`, 1); !r.IsError || r.Text() != want {
			t.Errorf("%s: the client saw %q (isError %v), want the uniform refusal", tc.name, firstLine(r.Text()), r.IsError)
		}
	}
	if b := k.backends(); strings.Contains(b, `"int`) {
		t.Errorf("a refused registration is listed in kiln://backends:\n%s", b)
	}
	if s := k.call("search_tools", map[string]any{"task_description": "register manual call tool chain", "limit": 50}); strings.Contains(s.Text(), "int1.") {
		t.Errorf("search finds tools of a refused backend: %s", s.Text())
	}
	// The log line is written before the answer is sent, so it is there
	// now; a kiln that never writes it must fail here, not hang.
	if n := strings.Count(k.logged(), "runtime registration failed") - before; n < len(targets) {
		deadline := time.Now().Add(5 * time.Second)
		for n < len(targets) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			n = strings.Count(k.logged(), "runtime registration failed") - before
		}
		if n < len(targets) {
			t.Errorf("kiln logged the reason of %d of %d refusals", n, len(targets))
		}
	}
}

// TestHostileRegisterManualSSRF drives register_manual as a hostile client
// would: at kiln itself, at closed ports, at the cloud metadata address,
// at loopback and private servers under other spellings, and through a
// redirect. Every one is refused with the same words and nothing is
// registered; allow_hosts admits exactly what it names, never kiln itself.
func TestHostileRegisterManualSSRF(t *testing.T) {
	fault := startFaultHTTPServer(t)
	faultPort := portOf(t, fault)
	closed := closedPort(t)
	var redirectTo atomic.Value
	redirectTo.Store("http://127.0.0.1:1/")
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, redirectTo.Load().(string), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	redirectPort := portOf(t, redirector.URL)
	type target = struct {
		name string
		def  map[string]any
	}
	httpAt := func(url string) map[string]any { return map[string]any{"transport": "http", "url": url} }

	t.Run("refused by default", func(t *testing.T) {
		k := startSSRFKiln(t, "")
		redirectTo.Store(k.base + "/mcp")
		kilnPort := portOf(t, k.base)
		expectRefused(t, k, []target{
			{"kiln's own /mcp", httpAt(k.base + "/mcp")},
			{"kiln's own /sse", map[string]any{"transport": "sse", "url": k.base + "/sse"}},
			{"kiln via localhost", httpAt("http://localhost:" + kilnPort + "/mcp")},
			{"kiln via 0.0.0.0", httpAt("http://0.0.0.0:" + kilnPort + "/mcp")},
			{"closed loopback port (port-probe)", httpAt("http://" + closed + "/mcp")},
			{"ssh port (port-probe)", httpAt("http://127.0.0.1:22/")},
			{"cloud metadata", httpAt("http://169.254.169.254/latest/meta-data/")},
			{"cloud metadata, IPv4-mapped", httpAt("http://[::ffff:169.254.169.254]/latest/meta-data/")},
			{"private address", httpAt("http://10.255.255.1/mcp")},
			{"loopback fault server", httpAt(fault)},
			{"fault server via localhost", httpAt("http://localhost:" + faultPort + "/mcp")},
			{"fault server via ::ffff:127.0.0.1", httpAt("http://[::ffff:127.0.0.1]:" + faultPort + "/mcp")},
			{"fault server via ::1", httpAt("http://[::1]:" + faultPort + "/mcp")},
			{"redirect to kiln", httpAt(redirector.URL + "/mcp")},
		})
		// The meta-tools stay out of the sandbox: there is no int1 to call.
		if r := k.call("call_tool_chain", map[string]any{"code": `return await int1.register_manual({manual_call_template: {name: "x"}});`}); !r.IsError {
			t.Errorf("a program reached register_manual through kiln itself: %s", r.Text())
		}
		for _, reason := range []string{"kiln's own listener", "loopback", "link-local", "private"} {
			if !strings.Contains(k.logged(), reason) {
				t.Errorf("kiln's log never gives the reason %q", reason)
			}
		}
	})

	t.Run("allow_hosts admits what it names, never kiln", func(t *testing.T) {
		k := startSSRFKiln(t, fmt.Sprintf("    allow_hosts: [\"127.0.0.1:%s\", localhost]\n", faultPort))
		kilnPort := portOf(t, k.base)
		redirectTo.Store("http://127.0.0.1:" + kilnPort + "/mcp")
		expectRefused(t, k, []target{
			{"kiln's own /mcp", httpAt(k.base + "/mcp")},
			{"kiln via an allowed name", httpAt("http://localhost:" + kilnPort + "/mcp")},
			{"closed port of an allowed name", httpAt("http://localhost:" + portOf(t, "http://"+closed) + "/mcp")},
			{"closed port not allowed", httpAt("http://" + closed + "/mcp")},
			{"allowed name redirecting to kiln", httpAt("http://localhost:" + redirectPort + "/mcp")},
			{"cloud metadata", httpAt("http://169.254.169.254/latest/meta-data/")},
		})
		r := k.register("web", map[string]any{"transport": "http", "url": fault})
		if r.IsError {
			t.Fatalf("the allowed fault server: %s", r.Text())
		}
		if r := k.call("call_tool_chain", map[string]any{"code": `return await web.echo({text: "through allow_hosts"});`}); r.IsError || !strings.Contains(r.Text(), "through allow_hosts") {
			t.Errorf("echo through the allowed backend: %s", r.Text())
		}
		if !strings.Contains(k.backends(), `"web"`) {
			t.Error("the allowed backend is not listed in kiln://backends")
		}
	})
}

// TestHostileBackendEnvironment checks what a stdio backend inherits from
// kiln: the basics a program needs, its configured env, and nothing else
// (not kiln's HTTP token, not an unrelated secret).
func TestHostileBackendEnvironment(t *testing.T) {
	k := startSSRFKiln(t, "")
	var names []string
	eventually(t, "envb answers", func() bool {
		r := k.call("call_tool_chain", map[string]any{"code": `{"tool": "envb.env"}`})
		names = strings.Split(r.Text(), "\n")
		return !r.IsError
	})
	for _, want := range []string{"HOME", "PATH", "CONFIGURED_X"} {
		if !slices.Contains(names, want) {
			t.Errorf("the backend lacks %s; it sees %v", want, names)
		}
	}
	for _, leaked := range []string{"KILN_HTTP_TOKEN", "SECRET_X"} {
		if slices.Contains(names, leaked) {
			t.Errorf("kiln's %s reached the backend", leaked)
		}
	}
	t.Logf("a stdio backend sees %d variables: %s", len(names), strings.Join(names, " "))
}
