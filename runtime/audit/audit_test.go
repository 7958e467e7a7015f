package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// answers is the backend side of the Caller tests: a stand-in for the
// policy guard and dispatcher, answering by tool name (the tests here
// are about what the wrapper records; tests/audit_test.go runs the real
// chain).
type answers struct{}

func (answers) CallTool(_ context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	switch tool {
	case "ok":
		return &toolcall.Result{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"fine"}`)}}, nil
	case "bad":
		return toolcall.Errorf("no"), nil
	case "denied":
		return nil, &dispatch.Error{Code: dispatch.CodeDenied}
	case "limited":
		return nil, &dispatch.Error{Code: dispatch.CodeRateLimited}
	case "slow":
		return nil, &dispatch.Error{Code: dispatch.CodeTimeout}
	case "down":
		return nil, &dispatch.Error{Code: dispatch.CodeUnavailable}
	case "gone":
		return nil, context.Canceled
	}
	return nil, errors.New("boom")
}

func readLines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func TestCallerRecordsEveryOutcome(t *testing.T) {
	for _, values := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		l, err := Open(Options{Path: path, Values: values, Replica: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		scope := func(context.Context) (string, string, string) { return "s1", "team", "2" }
		c := l.Caller(answers{}, scope)
		ctx := toolcall.WithIdentity(context.Background(), toolcall.Identity{Kind: "jwt", Subject: "alice"})
		want := map[string]string{"ok": OutcomeOK, "bad": OutcomeIsError, "denied": OutcomeDenied, "limited": OutcomeRateLimited,
			"slow": OutcomeTimeout, "down": OutcomeBackendDown, "gone": OutcomeCanceled, "other": OutcomeError}
		for tool := range want {
			_, _ = c.CallTool(ctx, "b", tool, json.RawMessage(`{"z": 1, "secret": "hunter2"}`))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		if strings.Contains(string(raw), "hunter2") != values {
			t.Errorf("values %v: the argument value in the file is %v", values, !values)
		}
		lines := readLines(t, path)
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d", len(lines), len(want))
		}
		digest := Digest([]byte(`{"secret":"hunter2","z":1}`))
		for _, r := range lines {
			tool := strings.TrimPrefix(r.Tool, "b.")
			if r.Outcome != want[tool] {
				t.Errorf("%s: outcome %q, want %q", tool, r.Outcome, want[tool])
			}
			if r.Identity != "jwt alice" || r.Session != "s1" || r.Profile != "team" || r.Tier != "2" || r.Replica != "r1" || r.Event != EventCall {
				t.Errorf("%s: scope not recorded: %+v", tool, r)
			}
			if r.ArgsSHA256 != digest {
				t.Errorf("%s: digest %s, want the canonical JSON's %s", tool, r.ArgsSHA256, digest)
			}
			if values && string(r.Args) != `{"secret":"hunter2","z":1}` {
				t.Errorf("%s: args %s, want canonical JSON", tool, r.Args)
			}
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{"b": [1, 2.50, {"y":null,"x":"<&>"}], "a": true}`: `{"a":true,"b":[1,2.50,{"x":"<&>","y":null}]}`,
		``:          `{}`,
		`not json`:  `not json`,
		`{"a":1} 2`: `{"a":1} 2`,
	} {
		if got := string(Canonical([]byte(in))); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	if Digest([]byte(`{"a":1,"b":2}`)) != Digest([]byte("{ \"b\" : 2,\n\"a\":1 }")) {
		t.Error("the digest depends on key order or spacing")
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(Options{Path: path, MaxSize: 2000, Keep: 2, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		l.Add(Record{Event: EventReload, Detail: strings.Repeat("x", 100)})
		if i%5 == 4 {
			l.flush() // no writer race: FlushEvery is an hour and batches are small
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range []string{"audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Size() > 2000 {
			t.Errorf("%s has %d bytes, over max_size", name, st.Size())
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, st.Mode().Perm())
		}
		total += len(readLines(t, filepath.Join(dir, name)))
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.jsonl.3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("keep: 2 left audit.jsonl.3 (%v)", err)
	}
	if total == 0 || total >= 60 {
		t.Errorf("%d lines kept in three files of 2000 bytes; want some, and the oldest rotated away", total)
	}
}

// TestFullDisk writes to /dev/full, which fails every write with ENOSPC
// as a full disk does: the log reports a problem and Add never blocks.
func TestFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Path: path, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 10 {
		l.Add(Record{Event: EventReload})
	}
	l.flush()
	if err := l.Problem(); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Problem() = %v, want the write's ENOSPC", err)
	}
	if n := strings.Count(string(l.retry), "\n"); n != 10 {
		t.Errorf("%d lines kept for the next try, want 10", n)
	}
	l.Add(Record{Event: EventReload})
	l.flush()
	if n := strings.Count(string(l.retry), "\n"); n != 11 {
		t.Errorf("%d lines kept after a second failed write, want 11", n)
	}
}

func TestOpenRefusesWithTheKey(t *testing.T) {
	_, err := Open(Options{Path: filepath.Join(t.TempDir(), "missing", "audit.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "gateway.audit.path") {
		t.Fatalf("Open in a missing folder: %v, want an error naming gateway.audit.path", err)
	}
}

func TestNilLogIsOff(t *testing.T) {
	var l *Log
	l.Add(Record{})
	if l.Caller(answers{}, nil) == nil || l.Problem() != nil || l.Close() != nil {
		t.Fatal("a nil Log must be a no-op")
	}
}
