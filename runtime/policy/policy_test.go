package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// load compiles the policies of a real kiln.yaml, so the tests read the
// rules as users write them.
func load(t *testing.T, yaml string) *Set {
	t.Helper()
	cfg, err := config.LoadBytes([]byte("version: 1\n"+yaml), "kiln.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Compile(cfg.Policies)
}

const rules = `policies:
  - name: admins
    match: {kind: jwt, claims: {scope: admin}}
    allow: ["*"]
  - name: no-destructive
    annotations: {destructiveHint: true}
    deny: ["*"]
  - name: ci
    match: {kind: jwt, subject: "ci-*", claims: {groups: [ci]}}
    allow: ["github.get_*", "everything.*"]
    deny: ["everything.long*"]
  - name: local
    match: {kind: local}
    allow: ["*"]
`

func jwt(sub string, claims map[string]any) toolcall.Identity {
	return toolcall.Identity{Kind: "jwt", Subject: sub, Claims: claims}
}

var destructive = json.RawMessage(`{"destructiveHint": true, "title": "x"}`)

func TestDecide(t *testing.T) {
	s := load(t, rules)
	ci := jwt("ci-bot", map[string]any{"groups": []any{"ci", "ops"}})
	admin := jwt("ann", map[string]any{"scope": "read admin"})
	cases := []struct {
		name string
		id   toolcall.Identity
		tool Tool
		want bool
		rule string
	}{
		{"ci allowed by glob", ci, Tool{Backend: "github", Name: "get_issue"}, true, "ci"},
		{"ci deny before allow in one rule", ci, Tool{Backend: "everything", Name: "longRunningOperation"}, false, "ci"},
		{"ci tool no glob names: default deny", ci, Tool{Backend: "github", Name: "create_issue"}, false, ""},
		{"ci destructive denied by annotations", ci, Tool{Backend: "github", Name: "get_x", Annotations: destructive}, false, "no-destructive"},
		{"admin scope word allows destructive", admin, Tool{Backend: "github", Name: "delete_repo", Annotations: destructive}, true, "admins"},
		{"subject glob must match", jwt("alice", map[string]any{"groups": []any{"ci"}}), Tool{Backend: "github", Name: "get_issue"}, false, ""},
		{"claim must be there", jwt("ci-x", nil), Tool{Backend: "github", Name: "get_issue"}, false, ""},
		{"local allowed", toolcall.Identity{Kind: "local", Subject: "bob"}, Tool{Backend: "github", Name: "create_issue"}, true, "local"},
		{"no identity: default deny", toolcall.Identity{}, Tool{Backend: "github", Name: "get_issue"}, false, ""},
		{"unlisted: annotation deny applies", toolcall.Identity{Kind: "local"}, Tool{Backend: "new", Name: "tool", Unlisted: true}, false, "no-destructive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := s.Decide(c.id, c.tool)
			if d.Allowed != c.want || d.Name != c.rule {
				t.Errorf("Decide = allowed %v by %q (%s), want %v by %q", d.Allowed, d.Name, d.Why, c.want, c.rule)
			}
			if s.Allows(c.id, c.tool) != c.want {
				t.Errorf("Allows disagrees with Decide")
			}
		})
	}
}

func TestNoPoliciesAllowsAll(t *testing.T) {
	s := load(t, "")
	if s != nil || !s.Allows(toolcall.Identity{}, Tool{Backend: "a", Name: "b"}) {
		t.Fatal("no policies must allow everything")
	}
	// Limits only: access stays open.
	s = load(t, "policies:\n  - {match: {kind: jwt}, rate: 1}\n")
	if !s.Allows(jwt("x", nil), Tool{Backend: "a", Name: "b"}) {
		t.Fatal("a list of limits only must leave access open")
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{{"*", "a.b", true}, {"a.*", "a.b", true}, {"a.*", "ab.c", false}, {"*.get_*", "x.get_y", true},
		{"a.b", "a.b", true}, {"a.b", "a.bc", false}, {"a*b*c", "abc", true}, {"a*b*c", "acb", false}, {"*x", "x", true}, {"a*a", "a", false}} {
		if got := compileGlob(c.pat).match(c.s); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestParseIdentity(t *testing.T) {
	id, err := ParseIdentity("jwt:alice groups=ci,ops scope=deploy")
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != "jwt" || id.Subject != "alice" || id.Claims["scope"] != "deploy" || len(id.Claims["groups"].([]any)) != 2 {
		t.Fatalf("got %+v", id)
	}
	for _, bad := range []string{"", "robot:x", "jwt:a groups", "local:bob groups=x"} {
		if _, err := ParseIdentity(bad); err == nil {
			t.Errorf("ParseIdentity(%q) accepted", bad)
		}
	}
}

func TestConfigRefusesBadRules(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"policies:\n  - {match: {kind: robot}, allow: ['*']}\n", "not an identity kind"},
		{"policies:\n  - {match: {kind: jwt}}\n", "the rule does nothing"},
		{"policies:\n  - {allow: ['*'], burst: 3}\n", "burst needs rate"},
		{"policies:\n  - {allow: ['*'], rate: 0}\n", "not a rate"},
		{"policies:\n  - {allow: ['*'], annotations: {destructiveHint: yes please}}\n", "not true or false"},
		{"policies:\n  - {allow: ['*'], alow: ['x']}\n", `did you mean "allow"`},
	} {
		_, err := config.LoadBytes([]byte("version: 1\n"+c.yaml), "kiln.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}

// echo is the Caller behind the guard: a test double, since what is
// tested is the guard's decision, not a backend.
type echo struct {
	mu    sync.Mutex
	calls int
	block chan struct{}
}

func (e *echo) CallTool(ctx context.Context, backend, tool string, _ json.RawMessage) (*toolcall.Result, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	if e.block != nil {
		<-e.block
	}
	return toolcall.Text("ok"), nil
}

func resolver(backend, tool string) (Tool, bool) {
	if backend == "gone" {
		return Tool{}, false
	}
	return Tool{Backend: backend, Name: tool}, true
}

func TestGuardRefusesDenied(t *testing.T) {
	next := &echo{}
	g := NewGuard(next, load(t, rules), resolver, nil, nil)
	ctx := toolcall.WithIdentity(context.Background(), jwt("ci-bot", map[string]any{"groups": []any{"ci"}}))
	if _, err := g.CallTool(ctx, "github", "get_issue", nil); err != nil {
		t.Fatal(err)
	}
	_, err := g.CallTool(ctx, "github", "create_issue", nil)
	var de *dispatch.Error
	if !errors.As(err, &de) || de.Code != dispatch.CodeDenied || !strings.Contains(de.Message, "search_tools") || strings.Contains(de.Message, "ci") {
		t.Fatalf("err = %v, want a CodeDenied refusal that names no rule", err)
	}
	if next.calls != 1 {
		t.Fatalf("backend saw %d calls, want 1", next.calls)
	}
}

func TestGuardRate(t *testing.T) {
	s := load(t, "policies:\n  - {match: {subject: slow}, rate: 1, burst: 3}\n")
	c := NewLocalCounter().(*localCounter)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	g := NewGuard(&echo{}, s, resolver, c, nil)
	slow := toolcall.WithIdentity(context.Background(), toolcall.Identity{Kind: "jwt", Subject: "slow"})
	fast := toolcall.WithIdentity(context.Background(), toolcall.Identity{Kind: "jwt", Subject: "fast"})
	refused := 0
	for range 10 {
		if _, err := g.CallTool(slow, "a", "b", nil); err != nil {
			if dispatch.CodeOf(err) != dispatch.CodeRateLimited || !strings.Contains(err.Error(), "Retry in 1s") {
				t.Fatalf("err = %v", err)
			}
			refused++
		}
		if _, err := g.CallTool(fast, "a", "b", nil); err != nil {
			t.Fatalf("unlimited identity refused: %v", err)
		}
	}
	if refused != 7 {
		t.Fatalf("refused %d of 10, want 7 (burst 3)", refused)
	}
	now = now.Add(2 * time.Second)
	if _, err := g.CallTool(slow, "a", "b", nil); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestGuardMaxInFlight(t *testing.T) {
	s := load(t, "policies:\n  - {match: {kind: local}, max_in_flight: 2}\n")
	next := &echo{block: make(chan struct{})}
	g := NewGuard(next, s, resolver, nil, nil)
	ctx := toolcall.WithIdentity(context.Background(), toolcall.Identity{Kind: "local", Subject: "bob"})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = g.CallTool(ctx, "a", "b", nil) })
	}
	for {
		next.mu.Lock()
		n := next.calls
		next.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, err := g.CallTool(ctx, "a", "b", nil)
	if dispatch.CodeOf(err) != dispatch.CodeRateLimited || !strings.Contains(err.Error(), "Retry once one of them has returned") {
		t.Fatalf("third call: %v", err)
	}
	close(next.block)
	wg.Wait()
	if _, err := g.CallTool(ctx, "a", "b", nil); err != nil {
		t.Fatalf("after the others returned: %v", err)
	}
}

func BenchmarkDecide50(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("policies:\n")
	for i := range 49 {
		sb.WriteString("  - {match: {kind: jwt, subject: \"team" + string(rune('a'+i%26)) + "-*\", claims: {groups: [g" + string(rune('a'+i%26)) + "]}}, allow: [\"b" + string(rune('a'+i%26)) + ".*\"], deny: [\"*.delete_*\"]}\n")
	}
	sb.WriteString("  - {match: {kind: jwt}, allow: [\"everything.*\"]}\n")
	cfg, err := config.LoadBytes([]byte("version: 1\n"+sb.String()), "kiln.yaml", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := Compile(cfg.Policies)
	id := jwt("alice", map[string]any{"groups": []any{"x", "y"}})
	tool := Tool{Backend: "everything", Name: "echo"}
	for b.Loop() {
		if !s.Allows(id, tool) {
			b.Fatal("denied")
		}
	}
}
