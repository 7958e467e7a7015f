//go:build e2e

package tests

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	testIssuer   = "https://issuer.kiln-e2e.test"
	testAudience = "kiln-e2e"
)

// issuer is the tests' authorization server: an RSA key and its JWKS,
// served on loopback, minting RS256 access tokens for any subject.
type issuer struct {
	key  *rsa.PrivateKey
	jwks *httptest.Server
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := map[string]string{"kty": "RSA", "kid": "e2e", "use": "sig", "alg": "RS256",
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwk}})
	}))
	t.Cleanup(srv.Close)
	return &issuer{key: k, jwks: srv}
}

// token mints an access token for sub with extra claims.
func (is *issuer) token(t *testing.T, sub string, extra map[string]any) string {
	t.Helper()
	claims := map[string]any{"iss": testIssuer, "sub": sub, "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	b64 := base64.RawURLEncoding.EncodeToString
	hb, _ := json.Marshal(map[string]any{"alg": "RS256", "kid": "e2e", "typ": "JWT"})
	cb, _ := json.Marshal(claims)
	in := b64(hb) + "." + b64(cb)
	digest := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, is.key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + b64(sig)
}

// gatewayAuth is the gateway.http section accepting the issuer's tokens.
func (is *issuer) gatewayAuth() string {
	return "  http:\n    jwt_issuer: " + testIssuer + "\n    jwks_url: " + is.jwks.URL + "\n    audience: " + testAudience
}

// policyRules: admins do anything; destructive tools are denied to the
// rest; CI reads files and echoes; "limited" has a rate it exhausts at
// once (1 call per 100 s, burst 3: the count of refusals cannot depend on
// how fast the machine is); "flight" may run one call at a time.
const policyRules = `
policies:
  - name: admins
    match: {kind: jwt, claims: {scope: admin}}
    allow: ["*"]
  - name: no-destructive
    annotations: {destructiveHint: true}
    deny: ["*"]
  - name: ci
    match: {kind: jwt, claims: {groups: [ci]}}
    allow: ["everything.echo", "everything.trigger-long-running-operation", "filesystem.*",
            "resource:demo://resource/static/document/*", "prompt:everything.simple-prompt"]
  - name: limited
    match: {kind: jwt, subject: limited}
    allow: ["everything.*"]
    rate: 0.01
    burst: 3
  - name: flight
    match: {kind: jwt, subject: flight}
    allow: ["everything.*"]
    max_in_flight: 1
`

// withPolicies appends rules to the config at path.
func withPolicies(t *testing.T, path, rules string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, rules...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mcpgoAs(t *testing.T, base, token string) session {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return startMCPGo(t, c)
}

// bearer adds a token to every request of the go-sdk's client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func sdkAs(t *testing.T, base, token string) session {
	t.Helper()
	return connectSDK(t, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}})
}

// listed is every tool list_tools_meta shows the session.
func listed(t *testing.T, s session) []string {
	t.Helper()
	r := callReady(t, s, "list_tools_meta", map[string]any{"page_size": 200})
	var page struct {
		Tools []struct{ Tool string } `json:"tools"`
		Total int                     `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.Text()), &page); err != nil {
		t.Fatalf("list_tools_meta: %v: %s", err, r.Text())
	}
	var ids []string
	for _, e := range page.Tools {
		ids = append(ids, e.Tool)
	}
	if page.Total != len(ids) {
		t.Errorf("list_tools_meta total %d, listed %d: the total must count only what the identity may see", page.Total, len(ids))
	}
	return ids
}

func chain(t *testing.T, s session, code string) result {
	t.Helper()
	return callReady(t, s, "call_tool_chain", map[string]any{"code": code})
}

const denied = "is not available to you"

func TestPolicyHTTP(t *testing.T) {
	is := newIssuer(t)
	cfg := withPolicies(t, peerConfig(t, peerOptions{Gateway: is.gatewayAuth()}), policyRules)
	base := startHTTP(t, "--config", cfg)
	ci := mcpgoAs(t, base, is.token(t, "ci-bot", map[string]any{"groups": []string{"ci", "ops"}}))
	admin := sdkAs(t, base, is.token(t, "root", map[string]any{"scope": "openid admin"}))
	stranger := mcpgoAs(t, base, is.token(t, "nobody", nil))

	t.Run("listings", func(t *testing.T) {
		got := listed(t, ci)
		for _, want := range []string{"everything.echo", "filesystem.read_text_file"} {
			if !slices.Contains(got, want) {
				t.Errorf("ci's listing lacks %s: %v", want, got)
			}
		}
		for _, hidden := range []string{"everything.get-sum", "filesystem.write_file", "filesystem.edit_file", "memory.create_entities"} {
			if slices.Contains(got, hidden) {
				t.Errorf("ci's listing shows %s, which its rules deny", hidden)
			}
		}
		if all := listed(t, admin); !slices.Contains(all, "filesystem.write_file") || !slices.Contains(all, "everything.get-sum") || len(all) <= len(got) {
			t.Errorf("admin sees %d tools (%v), want every tool", len(all), all)
		}
		if none := listed(t, stranger); len(none) != 0 {
			t.Errorf("an identity no rule allows sees %v", none)
		}
	})

	t.Run("search", func(t *testing.T) {
		r := callReady(t, ci, "search_tools", map[string]any{"task_description": "add two numbers", "limit": 20})
		if strings.Contains(r.Text(), "everything.get-sum") {
			t.Errorf("ci's search shows the denied everything.get-sum: %s", r.Text())
		}
		r = callReady(t, ci, "search_tools", map[string]any{"task_description": "write a file", "limit": 20, "brief": false})
		if strings.Contains(r.Text(), "filesystem.write_file") || strings.Contains(r.Text(), "filesystem.edit_file") {
			t.Errorf("ci's search shows a destructive tool: %s", r.Text())
		}
		r = callReady(t, admin, "search_tools", map[string]any{"task_description": "add two numbers"})
		if !strings.Contains(r.Text(), "everything.get-sum") {
			t.Errorf("admin's search lacks everything.get-sum: %s", r.Text())
		}
		r = callReady(t, ci, "tool_info", map[string]any{"tool_name": "everything.get-sum"})
		if !r.IsError || !strings.Contains(r.Text(), "not found") {
			t.Errorf("tool_info of a denied tool for ci: %v %s, want not found", r.IsError, r.Text())
		}
	})

	t.Run("tiers", func(t *testing.T) {
		for _, c := range []struct{ name, code, want string }{
			{"tier 1 allowed", `{"tool": "everything.echo", "arguments": {"message": "hi-ci"}}`, "hi-ci"},
			{"tier 1 denied", `{"tool": "everything.get-sum", "arguments": {"a": 1, "b": 2}}`, denied},
			{"tier 1 destructive denied", `{"tool": "filesystem.write_file", "arguments": {"path": "x.txt", "content": "x"}}`, denied},
			{"tier 2 allowed", `await everything.echo({message: "lit-ci"})`, "lit-ci"},
			{"tier 2 denied", `await everything.get_sum({a: 1, b: 2})`, denied},
			{"tier 3 allowed", `const r = await everything.echo({message: "p" + "rog"}); return r;`, "prog"},
			// Hidden from the bindings, so the program cannot even get
			// hold of the function; the guard would refuse the call.
			{"tier 3 name built at run time", `const n = ["get", "sum"].join("_"); const r = await everything[n]({a: 1, b: 2}); return r;`, "no member 'get_sum'"},
			// The bridge's own call, which any program can reach, with a
			// name built at run time: the host refuses it.
			{"tier 3 raw bridge call", `const r = await __kiln_call(["every", "thing"].join(""), "get-" + "sum", {a: 1, b: 2}); return r;`, denied},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := chain(t, ci, c.code)
				if !strings.Contains(r.Text(), c.want) || (c.want == denied || strings.HasPrefix(c.want, "no member")) != r.IsError {
					t.Errorf("%s: isError=%v %q, want %q", c.code, r.IsError, r.Text(), c.want)
				}
				if c.want == denied && strings.Contains(r.Text(), "= 3") {
					t.Errorf("the denied tool ran: %s", r.Text())
				}
			})
		}
		// The program's bindings lose what ci may not use.
		probe := `return [typeof everything.get_sum, typeof everything["get-sum"], "k" + Object.keys(everything).includes("get_sum"), "g" + (__getToolInterface("everything.get-sum") === null), "i" + ("get-sum" in __interfaces.everything), typeof everything.echo, typeof filesystem.write_file, typeof filesystem.read_text_file, typeof __kiln_call].join(",");`
		if r := chain(t, ci, probe); r.Text() != "undefined,undefined,kfalse,gtrue,ifalse,function,undefined,function,function" {
			t.Errorf("ci's program sees: %s", r.Text())
		}
		if r := chain(t, admin, probe); r.Text() != "function,function,ktrue,gfalse,itrue,function,function,function,function" {
			t.Errorf("admin's program sees: %s", r.Text())
		}
		r := chain(t, admin, `const n = ["get", "sum"].join("_"); const r = await everything[n]({a: 1, b: 2}); return r;`)
		if r.IsError || !strings.Contains(r.Text(), "3") {
			t.Errorf("admin's program: %v %s", r.IsError, r.Text())
		}
	})

	t.Run("rate limit: one identity refused, the other unaffected", func(t *testing.T) {
		limited := mcpgoAs(t, base, is.token(t, "limited", nil))
		echo := `{"tool": "everything.echo", "arguments": {"message": "x"}}`
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused, ciFailed := 0, 0, 0
		for range 10 {
			wg.Go(func() {
				r := chain(t, limited, echo)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case !r.IsError:
					ok++
				case strings.Contains(r.Text(), "rate limit") && strings.Contains(r.Text(), "Retry in"):
					refused++
				default:
					t.Errorf("limited: unexpected %s", r.Text())
				}
			})
			wg.Go(func() {
				if r := chain(t, ci, echo); r.IsError {
					mu.Lock()
					ciFailed++
					mu.Unlock()
					t.Errorf("ci refused: %s", r.Text())
				}
			})
		}
		wg.Wait()
		if ok != 3 || refused != 7 || ciFailed != 0 {
			t.Errorf("limited: %d ok, %d refused (want 3 and 7, burst 3); ci: %d failed (want 0)", ok, refused, ciFailed)
		}
	})

	t.Run("max_in_flight", func(t *testing.T) {
		flight := mcpgoAs(t, base, is.token(t, "flight", nil))
		// The first call holds its slot for 3 s: the others, started
		// together, find it taken.
		long := `{"tool": "everything.trigger-long-running-operation", "arguments": {"duration": 3, "steps": 1}}`
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for range 4 {
			wg.Go(func() {
				r := chain(t, flight, long)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case !r.IsError:
					ok++
				case strings.Contains(r.Text(), "max_in_flight") && strings.Contains(r.Text(), "Retry once"):
					refused++
				default:
					t.Errorf("flight: unexpected %s", r.Text())
				}
			})
			wg.Go(func() {
				if r := chain(t, ci, long); r.IsError {
					t.Errorf("ci refused while flight is limited: %s", r.Text())
				}
			})
		}
		wg.Wait()
		if ok != 1 || refused != 3 {
			t.Errorf("flight: %d ran, %d refused; want 1 and 3", ok, refused)
		}
	})
}

// TestPolicyResourcesAndPrompts: a backend's resources and prompts are
// listed and served only as the rules' resource: and prompt: globs allow.
func TestPolicyResourcesAndPrompts(t *testing.T) {
	is := newIssuer(t)
	cfg := withPolicies(t, peerConfig(t, peerOptions{OnlyEverything: true, Gateway: is.gatewayAuth()}), policyRules)
	base := startHTTP(t, "--config", cfg)
	client := func(token string) *mcpclient.Client {
		c, err := mcpclient.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		startMCPGo(t, c)
		return c
	}
	ci := client(is.token(t, "ci-bot", map[string]any{"groups": []string{"ci"}}))
	admin := client(is.token(t, "root", map[string]any{"scope": "admin"}))
	uris := func(c *mcpclient.Client) []string {
		var out []string
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := c.ListResources(t.Context(), mcpgo.ListResourcesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			out = out[:0]
			for _, r := range res.Resources {
				if strings.HasPrefix(r.URI, "demo://") {
					out = append(out, r.URI)
				}
			}
			if len(out) > 0 || time.Now().After(deadline) {
				return out
			}
			time.Sleep(200 * time.Millisecond) // the backend is still connecting
		}
	}
	all := uris(admin)
	got := uris(ci)
	if len(got) == 0 || len(got) != len(all) {
		t.Errorf("ci lists %d demo resources, admin %d: the static documents are allowed to both", len(got), len(all))
	}
	for _, u := range got {
		if !strings.HasPrefix(u, "demo://resource/static/document/") {
			t.Errorf("ci lists %s", u)
		}
	}
	if _, err := ci.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: got[0]}}); err != nil {
		t.Errorf("ci reads %s: %v", got[0], err)
	}
	templates := func(c *mcpclient.Client) (out []string) {
		res, err := c.ListResourceTemplates(t.Context(), mcpgo.ListResourceTemplatesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range res.ResourceTemplates {
			if raw := tp.URITemplate.Raw(); strings.HasPrefix(raw, "demo://") {
				out = append(out, raw)
			}
		}
		return out
	}
	if ct, at := templates(ci), templates(admin); len(ct) != 0 || len(at) == 0 {
		t.Errorf("resource templates: ci %v (want none), admin %v", ct, at)
	}
	// An expansion of a template no rule allows ci.
	other := "demo://resource/dynamic/text/1"
	if _, err := ci.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: other}}); err == nil {
		t.Errorf("ci read %s, which no rule allows it", other)
	}
	if _, err := admin.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: other}}); err != nil {
		t.Errorf("admin reads %s: %v", other, err)
	}
	prompts := func(c *mcpclient.Client) []string {
		res, err := c.ListPrompts(t.Context(), mcpgo.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Prompts {
			if strings.HasPrefix(p.Name, "everything") {
				out = append(out, p.Name)
			}
		}
		return out
	}
	ciPrompts, adminPrompts := prompts(ci), prompts(admin)
	if len(ciPrompts) != 1 || !strings.Contains(ciPrompts[0], "simple-prompt") || len(adminPrompts) < 2 {
		t.Errorf("prompts: ci %v, admin %v", ciPrompts, adminPrompts)
	}
	for _, name := range adminPrompts {
		_, err := ci.GetPrompt(t.Context(), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: name, Arguments: map[string]string{"city": "x", "state": "y", "resourceType": "Text", "resourceId": "1"}}})
		if allowed := strings.Contains(name, "simple-prompt"); allowed != (err == nil) {
			t.Errorf("ci gets prompt %s: %v", name, err)
		}
	}
}

func TestPolicyDirect(t *testing.T) {
	is := newIssuer(t)
	cfg := withPolicies(t, peerConfig(t, peerOptions{Gateway: is.gatewayAuth() + "\n  expose: direct"}), policyRules)
	base := startHTTP(t, "--config", cfg)
	ci := mcpgoAs(t, base, is.token(t, "ci-bot", map[string]any{"groups": []string{"ci"}}))
	admin := sdkAs(t, base, is.token(t, "root", map[string]any{"scope": "admin"}))

	names, err := ci.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "everything__echo") || slices.Contains(names, "everything__get-sum") || slices.Contains(names, "filesystem__write_file") {
		t.Errorf("ci's tools/list: %v", names)
	}
	all, err := admin.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(all, "everything__get-sum") || !slices.Contains(all, "filesystem__write_file") {
		t.Errorf("admin's tools/list: %v", all)
	}
	if r := callReady(t, ci, "everything__echo", map[string]any{"message": "direct-ci"}); r.IsError || !strings.Contains(r.Text(), "direct-ci") {
		t.Errorf("ci's direct echo: %v %s", r.IsError, r.Text())
	}
	// Called by name although not listed: refused, not run.
	if r := callReady(t, ci, "everything__get-sum", map[string]any{"a": 1, "b": 2}); !r.IsError || !strings.Contains(r.Text(), denied) {
		t.Errorf("ci's direct get-sum: %v %s", r.IsError, r.Text())
	}
	if r := callReady(t, admin, "everything__get-sum", map[string]any{"a": 1, "b": 2}); r.IsError || !strings.Contains(r.Text(), "3") {
		t.Errorf("admin's direct get-sum: %v %s", r.IsError, r.Text())
	}
}

// TestPolicyStdio: kiln serve over stdio runs every call for the local
// user, whom the rules match by name.
func TestPolicyStdio(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cfg := withPolicies(t, peerConfig(t, peerOptions{OnlyEverything: true}), `
policies:
  - name: me
    match: {kind: local, subject: "`+u.Username+`"}
    allow: ["everything.echo"]
`)
	s := newMCPGoStdio(t, "--config", cfg)
	if got := listed(t, s); !slices.Equal(got, []string{"everything.echo"}) {
		t.Errorf("listing: %v, want only everything.echo", got)
	}
	if r := chain(t, s, `{"tool": "everything.echo", "arguments": {"message": "local"}}`); r.IsError {
		t.Errorf("echo: %s", r.Text())
	}
	if r := chain(t, s, `{"tool": "everything.get-sum", "arguments": {"a": 1, "b": 2}}`); !r.IsError || !strings.Contains(r.Text(), denied) {
		t.Errorf("get-sum: %v %s", r.IsError, r.Text())
	}
	// A reload applies new rules to the next call of the same session.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `allow: ["everything.echo"]`, `allow: ["everything.echo", "everything.get-sum"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := chain(t, s, `{"tool": "everything.get-sum", "arguments": {"a": 1, "b": 2}}`)
		if !r.IsError {
			break
		}
		if !strings.Contains(r.Text(), denied) || time.Now().After(deadline) {
			t.Fatalf("after the reload allowing it, get-sum: %s", r.Text())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := listed(t, s); !slices.Equal(got, []string{"everything.echo", "everything.get-sum"}) {
		t.Errorf("listing after the reload: %v", got)
	}
}

// profileRules: two profiles, composed with policies (a tool must be in
// the profile and allowed by the rules).
const profileRules = `
profiles:
  echo:
    tools: ["everything.echo", "everything.get-sum"]
    expose: direct
  files:
    tools: ["filesystem.read_*"]
  pinned:
    tools: ["everything.*"]
    expose: hybrid
    pin: ["everything.echo"]
policies:
  - name: admins
    match: {kind: jwt, claims: {scope: admin}}
    allow: ["*"]
  - name: ci
    match: {kind: jwt, claims: {groups: [ci]}}
    allow: ["everything.echo", "filesystem.*"]
  - name: me
    match: {kind: local}
    allow: ["*"]
`

func TestProfilesHTTP(t *testing.T) {
	is := newIssuer(t)
	cfg := withPolicies(t, peerConfig(t, peerOptions{Gateway: is.gatewayAuth()}), profileRules)
	base := startHTTP(t, "--config", cfg)
	ciTok := is.token(t, "ci-bot", map[string]any{"groups": []string{"ci"}})
	adminTok := is.token(t, "root", map[string]any{"scope": "admin"})

	at := func(t *testing.T, path, token string) session {
		c, err := mcpclient.NewStreamableHttpClient(base+path, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		return startMCPGo(t, c)
	}
	ci := at(t, "/mcp/echo", ciTok)
	names, err := ci.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"everything__echo"}) {
		t.Errorf("ci at /mcp/echo lists %v, want only everything__echo (get-sum is in the profile, not in ci's rules)", names)
	}
	admin := connectSDK(t, &sdk.StreamableClientTransport{Endpoint: base + "/mcp/echo", HTTPClient: &http.Client{Transport: bearer{adminTok}}})
	names, err = admin.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"everything__echo", "everything__get-sum"}) {
		t.Errorf("admin at /mcp/echo lists %v, want the profile's two tools", names)
	}
	if r := callReady(t, admin, "filesystem__read_text_file", map[string]any{"path": "x"}); !r.IsError {
		t.Errorf("a tool outside the profile ran: %s", r.Text())
	}

	files := at(t, "/mcp/files", adminTok)
	got := listed(t, files)
	if len(got) == 0 {
		t.Fatal("the files profile lists nothing")
	}
	for _, id := range got {
		if !strings.HasPrefix(id, "filesystem.read_") {
			t.Errorf("the files profile lists %s", id)
		}
	}
	if r := callReady(t, files, "search_tools", map[string]any{"task_description": "add two numbers", "limit": 20}); strings.Contains(r.Text(), "everything.") {
		t.Errorf("the files profile's search shows another backend's tool: %s", r.Text())
	}
	for _, code := range []string{
		`{"tool": "everything.echo", "arguments": {"message": "x"}}`,
		`const r = await __kiln_call("everything", "echo", {message: "x"}); return r;`,
	} {
		if r := chain(t, files, code); !r.IsError || !strings.Contains(r.Text(), "not served here (profile files)") {
			t.Errorf("%s through the files profile: %v %s", code, r.IsError, r.Text())
		}
	}
	if r := chain(t, files, `typeof everything === "undefined" || Object.keys(everything).length === 0`); r.Text() != "true" {
		t.Errorf("a program in the files profile still sees everything's tools: %s", r.Text())
	}

	// Legacy SSE at /sse/files.
	c, err := mcpclient.NewSSEMCPClient(base+"/sse/files", transport.WithHeaders(map[string]string{"Authorization": "Bearer " + adminTok}))
	if err != nil {
		t.Fatal(err)
	}
	sse := startMCPGo(t, c)
	if got := listed(t, sse); !slices.Equal(got, listed(t, files)) {
		t.Errorf("/sse/files lists %v", got)
	}
	// A hybrid profile lists the meta-tools and its pin.
	pinned, err := at(t, "/mcp/pinned", adminTok).ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(metaTools), "everything__echo"); !slices.Equal(sorted(pinned), sorted(want)) {
		t.Errorf("/mcp/pinned lists %v, want %v", pinned, want)
	}
	// The gateway's own endpoint is unchanged.
	if all := listed(t, at(t, "/mcp", adminTok)); !slices.Contains(all, "memory.create_entities") {
		t.Errorf("/mcp lost tools: %v", all)
	}
}

func TestProfilesStdio(t *testing.T) {
	cfg := withPolicies(t, peerConfig(t, peerOptions{}), profileRules)
	s := newMCPGoStdio(t, "--config", cfg, "--profile", "echo")
	names, err := s.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"everything__echo", "everything__get-sum"}) {
		t.Errorf("kiln serve --profile echo lists %v", names)
	}
	if r := callReady(t, s, "everything__get-sum", map[string]any{"a": 1, "b": 2}); r.IsError || !strings.Contains(r.Text(), "3") {
		t.Errorf("get-sum: %v %s", r.IsError, r.Text())
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
