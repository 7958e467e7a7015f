package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKeyTable checks the declarations themselves: bounds only on numbers,
// defaults inside their bounds and of their kind, fields that exist with
// the kind's Go type, and every connection key comparable by SameConnection.
func TestKeyTable(t *testing.T) {
	goType := map[keyKind]reflect.Type{
		kindDuration: reflect.TypeFor[time.Duration](),
		kindCount:    reflect.TypeFor[int](),
		kindSize:     reflect.TypeFor[int64](),
		kindFlag:     reflect.TypeFor[bool](),
	}
	bt := reflect.TypeFor[Backend]()
	for _, k := range keyTable {
		if k.parent() != "" {
			if p, ok := keyIndex[k.parent()]; !ok || (p.kind != kindSection && p.path != "backends") {
				if k.parent() != "backends.*" {
					t.Errorf("%s: parent %s is not a declared section", k.path, k.parent())
				}
			}
		}
		if k.doc == "" || strings.Contains(k.doc, "(default ") && k.def != "" {
			t.Errorf("%s: doc %q: every key needs a doc, without the default it declares", k.path, k.doc)
		}
		if (k.min == "") != (k.max == "") {
			t.Errorf("%s: min and max go together", k.path)
		}
		if k.min != "" {
			if _, numeric := goType[k.kind]; !numeric || k.kind == kindFlag {
				t.Errorf("%s: bounds on a key that is not a number", k.path)
				continue
			}
			lo, hi := mustParse(k, k.min), mustParse(k, k.max)
			if lo > hi {
				t.Errorf("%s: min %s above max %s", k.path, k.min, k.max)
			}
			if k.def != "" {
				if d := mustParse(k, k.def); d < lo || d > hi {
					t.Errorf("%s: default %s outside %s to %s", k.path, k.def, k.min, k.max)
				}
			}
		}
		if k.kind == kindEnum && k.def != "" && !slices.Contains(k.enum, k.def) {
			t.Errorf("%s: default %q is not one of %v", k.path, k.def, k.enum)
		}
		if k.field != "" {
			f, ok := bt.FieldByName(k.field)
			switch {
			case k.parent() != "backends.*":
				t.Errorf("%s: only backend keys name a Backend field", k.path)
			case !ok:
				t.Errorf("%s: Backend has no field %s", k.path, k.field)
			case k.plain() && f.Type != goType[k.kind]:
				t.Errorf("%s: field %s is %s, want %s", k.path, k.field, f.Type, goType[k.kind])
			}
		}
		if k.reload == reloadRestart && (k.parent() != "backends.*" || k.field == "") {
			t.Errorf("%s: a connection key must be a backend key naming its Backend field", k.path)
		}
	}
}

// TestSameConnection checks that every connection key restarts a backend
// when it changes, and that a limit does not.
func TestSameConnection(t *testing.T) {
	base := Backend{Name: "a", Transport: TransportStdio, Command: "x", Args: []string{"1"}, Env: map[string]string{"A": "1"},
		Timeout: time.Second, MaxConcurrent: 2, QueueWait: time.Second, Enabled: true}
	change := map[string]func(*Backend){
		"transport": func(b *Backend) { b.Transport = TransportHTTP },
		"command":   func(b *Backend) { b.Command = "y" },
		"args":      func(b *Backend) { b.Args = []string{"2"} },
		"env":       func(b *Backend) { b.Env = map[string]string{"A": "2"} },
		"cwd":       func(b *Backend) { b.Cwd = "/elsewhere" },
		"url":       func(b *Backend) { b.URL = "http://127.0.0.1:1/mcp" },
		"headers":   func(b *Backend) { b.Headers = map[string]string{"X": "1"} },
		"enabled":   func(b *Backend) { b.Enabled = false },
		"root":      func(b *Backend) { b.Workspace = &Workspace{Root: "/r"} },
		"auth":      func(b *Backend) { b.Auth = &Auth{Grant: GrantClientCredentials} },
	}
	for _, k := range keyTable {
		if k.parent() != "backends.*" {
			continue
		}
		f, ok := change[k.name()]
		if k.reload != reloadRestart {
			if ok {
				t.Errorf("%s: changes the connection but is not declared reloadRestart", k.path)
			}
			continue
		}
		if !ok {
			if k.field != "Workspace" {
				t.Errorf("%s: connection key without a case here", k.path)
			}
			continue
		}
		next := base
		f(&next)
		if SameConnection(base, next) {
			t.Errorf("%s changed but SameConnection says the connection is the same", k.path)
		}
	}
	limits := base
	limits.Timeout, limits.MaxConcurrent, limits.QueueWait, limits.Bare, limits.Required = time.Minute, 9, time.Minute, true, true
	if !SameConnection(base, limits) {
		t.Error("a change of limits counts as a new connection")
	}
	empty := base
	empty.Headers, empty.Env = map[string]string{}, map[string]string{"A": "1"}
	if !SameConnection(base, empty) {
		t.Error("an empty headers map differs from none")
	}
}

// TestRestartOnly checks that every gateway key maps to its Gateway field
// and that only keys read at start are reported.
func TestRestartOnly(t *testing.T) {
	gt := reflect.TypeFor[Gateway]()
	for _, k := range gatewayKeys {
		if _, ok := gt.FieldByName(gatewayField(k)); !ok {
			t.Errorf("gateway.%s: Gateway has no field %s", k, gatewayField(k))
		}
	}
	a := DefaultGateway()
	b := a
	b.Name, b.CallTimeout, b.Health.Interval, b.HTTP.MaxBody, b.Expose = "other", time.Minute, time.Minute, 1<<10, ExposeDirect
	got := RestartOnly(a, b)
	if want := []string{"gateway.name", "gateway.http", "gateway.expose"}; !slices.Equal(got, want) {
		t.Errorf("RestartOnly = %v, want %v (call_timeout and health apply live)", got, want)
	}
	if got := RestartOnly(a, a); got != nil {
		t.Errorf("RestartOnly of equal settings = %v, want none", got)
	}
}

// TestAliasesNameKeys keeps the "did you mean" aliases pointing at keys
// that exist.
func TestAliasesNameKeys(t *testing.T) {
	names := map[string]bool{}
	for _, k := range keyTable {
		names[k.name()] = true
	}
	for from, to := range keyAliases {
		if !names[to] {
			t.Errorf("keyAliases[%q] = %q, which no key is named", from, to)
		}
	}
}
