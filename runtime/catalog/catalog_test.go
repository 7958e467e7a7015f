package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
)

// liveTools stands in for the dispatcher: it serves tool lists set by the
// test. The end-to-end fault suite drives the real dispatcher; this double
// isolates the catalog's bookkeeping.
type liveTools struct {
	tools map[string][]manifest.Tool
}

func (l *liveTools) Tools(_ context.Context, name string) ([]manifest.Tool, error) {
	return l.tools[name], nil
}
func (l *liveTools) Snapshot(context.Context, string) (*manifest.Manifest, error) {
	return nil, errors.New("not used")
}
func (l *liveTools) AddBackend(config.Backend) error { return nil }
func (l *liveTools) RemoveBackend(string) bool       { return true }
func (l *liveTools) Ready(string) <-chan struct{}    { return nil }
func (l *liveTools) Status() []dispatch.Status       { return nil }

func tool(name, desc string) manifest.Tool {
	return manifest.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func newCatalog(t *testing.T, live *liveTools) (*Catalog, *registry.Registry) {
	t.Helper()
	return newCatalogMode(t, live, "", nil)
}

// newCatalogMode is newCatalog with gateway.drift set to mode ("" leaves
// the default) and logs, when set, receiving the catalog's log.
func newCatalogMode(t *testing.T, live *liveTools, mode config.DriftMode, logs *bytes.Buffer) (*Catalog, *registry.Registry) {
	t.Helper()
	reg := registry.New()
	m := &manifest.Manifest{Version: 1, Backend: "notes", Tools: []manifest.Tool{tool("read_note", "Read a note."), tool("delete_note", "Delete a note.")}}
	if err := reg.Add(m, true); err != nil {
		t.Fatal(err)
	}
	var docs []search.Doc
	for _, tl := range m.Tools {
		docs = append(docs, search.NewDoc("notes", tl.Name, "", tl.Description, tl.InputSchema))
	}
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{Name: "notes"}}}
	cfg.Gateway.Drift = mode
	opts := Options{Registry: reg, Backends: live, Config: cfg, Search: Lexical(search.Build(docs))}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return New(opts), reg
}

// TestRefreshServesDriftAndRestores is drift: warn, the live list served.
func TestRefreshServesDriftAndRestores(t *testing.T) {
	live := &liveTools{tools: map[string][]manifest.Tool{}}
	c, reg := newCatalogMode(t, live, config.DriftWarn, nil)
	live.tools["notes"] = []manifest.Tool{tool("read_note", "Read a note by its title."), tool("archive_note", "Archive a note for later.")}
	if err := c.Refresh(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	want := Drift{Added: []string{"archive_note"}, Removed: []string{"delete_note"}, Changed: []string{"read_note"}, Mode: config.DriftWarn}
	got := c.Drifts()["notes"]
	if diff := cmp.Diff(want, got, cmpIgnoreSince); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if _, err := reg.Resolve("notes.archive_note"); err != nil {
		t.Errorf("live tool not served: %v", err)
	}
	if _, err := reg.Resolve("notes.delete_note"); err == nil {
		t.Error("a tool the backend dropped is still served")
	}
	v := c.View()
	if hits := v.Search.Search("archive", search.Options{Limit: 3}); len(hits) == 0 || hits[0].ID != "notes.archive_note" {
		t.Errorf("search after drift: %+v", hits)
	}
	for _, h := range v.Search.Search("delete", search.Options{Limit: 3}) {
		if h.ID == "notes.delete_note" {
			t.Errorf("search still finds the dropped tool: %+v", h)
		}
	}
	if !strings.Contains(v.Extra, `"archive_note"`) {
		t.Error("the bridge does not bind the live tool")
	}

	// The backend goes back to its compiled tools: drift clears.
	live.tools["notes"] = []manifest.Tool{tool("delete_note", "Delete a note."), tool("read_note", "Read a note.")}
	if err := c.Refresh(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	if len(c.Drifts()) != 0 || c.View().Extra != "" {
		t.Errorf("drift not cleared: %v, extra preamble %d bytes", c.Drifts(), len(c.View().Extra))
	}
	if _, err := reg.Resolve("notes.delete_note"); err != nil {
		t.Errorf("compiled tool not restored: %v", err)
	}
}

var cmpIgnoreSince = cmp.Transformer("noSince", func(d Drift) Drift {
	return Drift{Added: d.Added, Removed: d.Removed, Changed: d.Changed, Mode: d.Mode, Offer: d.Offer}
})

func TestSameJSONIgnoresKeyOrder(t *testing.T) {
	if !sameJSON([]byte(`{"a":1,"b":[1,2]}`), []byte(`{ "b":[1,2], "a":1 }`)) {
		t.Error("key order counted as drift")
	}
	if sameJSON([]byte(`{"a":1}`), []byte(`{"a":2}`)) {
		t.Error("a changed value not counted")
	}
}

func TestAdmissionPolicy(t *testing.T) {
	live := &liveTools{}
	c, _ := newCatalog(t, live)
	c.cfg.Gateway.Registration = config.Registration{MaxBackends: 1, AllowCommands: []string{"/usr/bin/env"}}
	tests := []struct {
		name, backend, def, want string
	}{
		{"config backend name", "notes", `{"transport":"http","url":"http://h/mcp"}`, "kiln's own config"},
		{"stdio not allowed", "x", `{"command":"sh"}`, `command "sh" is not in gateway.registration.allow_commands (/usr/bin/env)`},
		{"stdio allowed by absolute path", "y", `{"command":"env"}`, ""},
		{"http allowed", "z", `{"transport":"http","url":"http://h/mcp"}`, ""},
		{"bad definition", "w", `{"transport":"http"}`, "url: missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.admitLocked(tc.backend, json.RawMessage(tc.def))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A registration still connecting counts against the cap and holds
	// its name.
	c.pending["y"] = true
	if _, err := c.admitLocked("y", json.RawMessage(`{"transport":"http","url":"http://h/mcp"}`)); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("a pending name: %v", err)
	}
	if _, err := c.admitLocked("z", json.RawMessage(`{"transport":"http","url":"http://h/mcp"}`)); err == nil || !strings.Contains(err.Error(), "max_backends") {
		t.Errorf("over the cap while one connects: %v", err)
	}
	delete(c.pending, "y")
	c.dynamic["y"] = json.RawMessage(`{}`)
	if _, err := c.admitLocked("z", json.RawMessage(`{"transport":"http","url":"http://h/mcp"}`)); err == nil || !strings.Contains(err.Error(), "max_backends") {
		t.Errorf("over the cap: %v", err)
	}
}

func TestCompiledBackendsLeftOutOfTheConfigAreHidden(t *testing.T) {
	reg := registry.New()
	var docs []search.Doc
	for _, m := range []*manifest.Manifest{
		{Version: 1, Backend: "notes", Tools: []manifest.Tool{tool("read_note", "Read a note.")}},
		{Version: 1, Backend: "vault", Tools: []manifest.Tool{tool("read_secret", "Read a secret note.")}},
	} {
		if err := reg.Add(m, true); err != nil {
			t.Fatal(err)
		}
		for _, tl := range m.Tools {
			docs = append(docs, search.NewDoc(m.Backend, tl.Name, "", tl.Description, tl.InputSchema))
		}
	}
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{Name: "notes"}}}
	c := New(Options{Registry: reg, Backends: &liveTools{}, Config: cfg, Search: Lexical(search.Build(docs))})

	if _, ok := reg.Backend("vault"); ok {
		t.Error("vault is still in the registry")
	}
	v := c.View()
	hits := v.Search.Search("read secret note", search.Options{Limit: 10})
	if len(hits) == 0 {
		t.Fatal("search finds nothing; want notes.read_note")
	}
	for _, h := range hits {
		if strings.HasPrefix(h.ID, "vault.") {
			t.Errorf("search finds hidden tool %s", h.ID)
		}
	}
	if _, ok := v.Table.BackendIdent("vault"); ok {
		t.Error("the bridge table still binds vault")
	}
	if !strings.Contains(v.Extra, `drop("vault", "vault")`) || strings.Contains(v.Extra, `"read_secret"`) {
		t.Errorf("the sandbox preamble must unbind vault and not bind its tools:\n%.400s", v.Extra)
	}
}

// TestDriftEventsForTheAuditLog: a drift and its clearing are each one
// event for Options.OnEvent, which the audit log records.
func TestDriftEventsForTheAuditLog(t *testing.T) {
	live := &liveTools{tools: map[string][]manifest.Tool{}}
	c, _ := newCatalogMode(t, live, config.DriftPin, nil)
	var events []string
	c.opts.OnEvent = func(kind, backend, detail string) { events = append(events, kind+" "+backend+": "+detail) }
	live.tools["notes"] = []manifest.Tool{tool("read_note", "Read a note."), tool("delete_note", "Delete a note."), tool("exfil", "Send it.")}
	if err := c.Refresh(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(t.Context(), "notes"); err != nil { // the same drift again: no new event
		t.Fatal(err)
	}
	live.tools["notes"] = []manifest.Tool{tool("read_note", "Read a note."), tool("delete_note", "Delete a note.")}
	if err := c.Refresh(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || !strings.HasPrefix(events[0], "drift notes: tools (pin): ") || !strings.Contains(events[0], "exfil") ||
		events[1] != "drift notes: tools match the reviewed manifest again" {
		t.Errorf("events %q, want the drift (naming exfil) and its clearing", events)
	}
}
