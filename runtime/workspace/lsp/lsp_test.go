package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestColumns(t *testing.T) {
	line := "a😀b"
	for _, tt := range []struct{ runes, units int }{{0, 0}, {1, 1}, {2, 3}, {3, 4}, {9, 4}} {
		if got := UTF16Col(line, tt.runes); got != tt.units {
			t.Errorf("UTF16Col(%d) = %d, want %d", tt.runes, got, tt.units)
		}
		if tt.runes <= 3 {
			if got := RuneCol(line, tt.units); got != tt.runes {
				t.Errorf("RuneCol(%d) = %d, want %d", tt.units, got, tt.runes)
			}
		}
	}
}

func TestApply(t *testing.T) {
	text := "x := Old()\r\ny := \"😀\" + Old()\n"
	got, err := Apply(text, []TextEdit{
		{Range: Range{Start: Position{1, 12}, End: Position{1, 15}}, NewText: "New"},
		{Range: Range{Start: Position{0, 5}, End: Position{0, 8}}, NewText: "New"},
	})
	if want := "x := New()\r\ny := \"😀\" + New()\n"; err != nil || got != want {
		t.Errorf("Apply = %q, %v; want %q", got, err, want)
	}
	_, err = Apply(text, []TextEdit{{Range: Range{Start: Position{0, 0}, End: Position{0, 4}}}, {Range: Range{Start: Position{0, 2}, End: Position{0, 6}}}})
	if !errors.Is(err, ErrOverlap) {
		t.Errorf("overlapping edits: %v", err)
	}
}

func TestDecode(t *testing.T) {
	locs, err := decodeLocations(json.RawMessage(`[{"targetUri":"file:///a.go","targetRange":{"start":{"line":1,"character":0},"end":{"line":3,"character":1}},"targetSelectionRange":{"start":{"line":1,"character":5},"end":{"line":1,"character":6}}}]`))
	if want := []Location{{URI: "file:///a.go", Range: Range{Position{1, 0}, Position{3, 1}}}}; err != nil || !cmp.Equal(locs, want) {
		t.Errorf("LocationLink: %v %v", locs, err)
	}
	if locs, _ := decodeLocations(json.RawMessage(`{"uri":"file:///b.go","range":{"start":{"line":2,"character":0},"end":{"line":2,"character":1}}}`)); len(locs) != 1 || locs[0].URI != "file:///b.go" {
		t.Errorf("Location: %v", locs)
	}
	for raw, want := range map[string]string{
		`{"kind":"markdown","value":"**x**"}`: "**x**",
		`"plain"`:                             "plain",
		`[{"language":"go","value":"func F()"},"the doc"]`: "```go\nfunc F()\n```\n\nthe doc",
		`{"language":"python","value":"def f()"}`:          "```python\ndef f()\n```",
	} {
		if got := hoverText(json.RawMessage(raw)); got != want {
			t.Errorf("hoverText(%s) = %q, want %q", raw, got, want)
		}
	}
	if p, ok := Path(URI("/tmp/a b/c.go")); !ok || p != "/tmp/a b/c.go" {
		t.Errorf("URI round trip: %q %v", p, ok)
	}
}

// peer is the server side of a Conn over pipes: it reads the client's
// messages and writes frames back.
type peer struct {
	in  *bufio.Reader
	out io.Writer
}

func newPair(t *testing.T) (*Conn, *peer) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	c := NewConn(cr, cw)
	t.Cleanup(func() { sw.Close(); c.Close() })
	return c, &peer{in: bufio.NewReader(sr), out: sw}
}

func (p *peer) read(t *testing.T) map[string]any {
	t.Helper()
	data, err := readFrame(p.in)
	if err != nil {
		t.Error(err)
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func (p *peer) send(v string) { fmt.Fprintf(p.out, "Content-Length: %d\r\n\r\n%s", len(v), v) }

// TestConn: a call's answer, an error answer, the server's own request
// answered, diagnostics kept, a call cancelled at its deadline, and the
// server's end failing what is pending.
func TestConn(t *testing.T) {
	c, p := newPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m := p.read(t)
		if m["method"] != "workspace/symbol" {
			t.Errorf("first message %v", m)
		}
		p.send(`{"jsonrpc":"2.0","id":7,"method":"workspace/configuration","params":{"items":[{},{}]}}`)
		if a := p.read(t); fmt.Sprint(a["result"]) != "[<nil> <nil>]" {
			t.Errorf("configuration answer %v", a)
		}
		p.send(`{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///a.go","diagnostics":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"severity":1,"message":"bad"}]}}`)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":[{"name":"F","kind":12,"location":{"uri":"file:///a.go","range":{"start":{"line":0,"character":5},"end":{"line":0,"character":6}}}}]}`, m["id"]))
		m = p.read(t)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":{"code":-32803,"message":"no can do"}}`, m["id"]))
		p.read(t) // hover, never answered
		if m := p.read(t); m["method"] != "$/cancelRequest" {
			t.Errorf("after the deadline: %v", m)
		}
	}()
	syms, err := c.WorkspaceSymbols(t.Context(), "F")
	if err != nil || len(syms) != 1 || syms[0].Name != "F" || KindName(syms[0].Kind) != "function" {
		t.Fatalf("WorkspaceSymbols = %v, %v", syms, err)
	}
	if d := c.Diagnostics("file:///a.go"); d.Seq != 1 || len(d.Items) != 1 || d.Items[0].Message != "bad" || c.Published() != 1 {
		t.Errorf("diagnostics = %+v", d)
	}
	var re *ResponseError
	if _, err := c.Rename(t.Context(), "file:///a.go", Position{}, "G"); !errors.As(err, &re) || re.Message != "no can do" {
		t.Errorf("Rename error = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Hover(ctx, "file:///a.go", Position{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hover past its deadline = %v", err)
	}
	<-done
	p.out.(io.Closer).Close()
	<-c.Done()
	if _, err := c.Definition(t.Context(), "file:///a.go", Position{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after the server ended: %v", err)
	}
	if !strings.Contains(c.Err().Error(), "closed") {
		t.Errorf("Err = %v", c.Err())
	}
}
