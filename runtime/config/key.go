package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// keyKind is how a key's value is written and checked.
type keyKind int

const (
	kindText     keyKind = iota // a single value read as written
	kindDuration                // a positive Go duration
	kindCount                   // a whole number of at least 1
	kindSize                    // a byte count or a number with a unit
	kindFlag                    // true or false
	kindEnum                    // one of enum
	kindSecret                  // a ${VAR} reference only
	kindList                    // a list of single values
	kindMap                     // names (case kept) to single values
	kindSection                 // a mapping of further keys
	kindVersion                 // the top-level version
	kindBackends                // the top-level backends mapping
	kindPolicies                // the top-level policies list (policy.go)
	kindProfiles                // the top-level profiles mapping (profile.go)
)

// reload says what a running kiln does when a reload changes a key.
type reload int

const (
	// reloadStart: read once at start; a change is logged and waits for
	// the next start. The zero value for gateway keys.
	reloadStart reload = iota
	// reloadLive: applied while kiln runs (for a backend: in place,
	// its session kept).
	reloadLive
	// reloadRestart: a backend's connection setting; a change restarts
	// that backend alone.
	reloadRestart
)

// key declares one setting; see keyTable.
type key struct {
	path string
	kind keyKind
	// def is the default as a config would write it; empty when there is
	// none or when defNote says how it is computed.
	def, defNote string
	// min and max bound durations, counts and sizes, written as in a config.
	min, max string
	enum     []string
	// noVar refuses a ${VAR} in place of an enum value (auth settings are
	// read before expansion).
	noVar bool
	doc   string
	// only lists the transports whose backends use the key (empty: all).
	only   []string
	reload reload
	// atStart marks a key read once at start inside a section a reload
	// applies live (registration.persist).
	atStart bool
	// field names the Backend field a plain backend scalar sets: the
	// builder parses and stores it with no code of its own.
	field string
	// schema replaces the JSON Schema the kind implies, for odd shapes.
	schema string
}

// isScalar reports whether the key holds a single value, layered through
// viper and overridable by a KILN_… variable.
func (k key) isScalar() bool {
	switch k.kind {
	case kindList, kindMap, kindSection, kindVersion, kindBackends, kindPolicies, kindProfiles, kindSecret:
		return false
	}
	return true
}

// name is the key's last path element.
func (k key) name() string { return k.path[strings.LastIndexByte(k.path, '.')+1:] }

// parent is the path of the section holding the key ("" at the top).
func (k key) parent() string {
	if i := strings.LastIndexByte(k.path, '.'); i >= 0 {
		return k.path[:i]
	}
	return ""
}

// keyIndex maps a key path to its declaration.
var keyIndex = func() map[string]key {
	m := make(map[string]key, len(keyTable))
	for _, k := range keyTable {
		if _, dup := m[k.path]; dup {
			panic("config: key declared twice: " + k.path)
		}
		m[k.path] = k
	}
	return m
}()

// declared returns the declaration of a key path; a backend's own name
// stands for "*".
func declared(path string) (key, bool) {
	if rest, ok := strings.CutPrefix(path, "backends."); ok {
		if _, sub, ok := strings.Cut(rest, "."); ok {
			path = "backends.*." + sub
		}
	}
	k, ok := keyIndex[path]
	return k, ok
}

// childKeys returns the names of the keys directly under section path, in
// declaration order.
func childKeys(path string) []string {
	var out []string
	for _, k := range keyTable {
		if k.parent() == path {
			out = append(out, k.name())
		}
	}
	return out
}

// The key sets the parser and builder check against, derived from keyTable.
var (
	topKeys     = childKeys("")
	gatewayKeys = childKeys("gateway")
	backendKeys = childKeys("backends.*")
	// bashKeys are a workspace backend's bash section; env there is a list
	// of variable names, read from the node tree.
	bashKeys = childKeys("backends.*.bash")
	// lspKeys are a workspace backend's lsp section (parse.go lsp).
	lspKeys = childKeys("backends.*.lsp")
	// authKeys are the settings under a backend's auth: (authbuild.go).
	authKeys = childKeys("backends.*.auth")

	// sectionKeys maps each gateway mapping of settings to its keys. A key
	// whose own path is listed here holds a nested section; the others hold
	// scalars, layered through viper and overridable by KILN_<PATH>_<KEY>,
	// or lists (sectionListKeys).
	sectionKeys = func() map[string][]string {
		m := map[string][]string{}
		for _, k := range keyTable {
			if k.kind == kindSection && (k.path == "gateway" || strings.HasPrefix(k.path, "gateway.")) {
				m[k.path] = childKeys(k.path)
			}
		}
		return m
	}()

	// sectionListKeys hold lists of scalars; they are read from the node
	// tree, like args, and cannot be overridden from the environment.
	sectionListKeys = func() map[string]bool {
		m := map[string]bool{}
		for _, k := range keyTable {
			if k.kind == kindList && strings.HasPrefix(k.path, "gateway.") {
				m[k.path] = true
			}
		}
		return m
	}()

	// backendScalarKeys are layered through viper and can be overridden by
	// KILN_BACKENDS_<NAME>_<KEY>; lists and maps cannot.
	backendScalarKeys = func() []string {
		var out []string
		for _, k := range keyTable {
			if k.parent() == "backends.*" && k.isScalar() {
				out = append(out, k.name())
			}
		}
		return out
	}()

	stdioOnlyKeys     = onlyKeys(TransportStdio)
	remoteOnlyKeys    = onlyKeys(TransportHTTP)
	workspaceOnlyKeys = onlyKeys(TransportWorkspace)

	transports  = keyIndex["backends.*.transport"].enum
	logLevels   = keyIndex["gateway.log_level"].enum
	exposeModes = keyIndex["gateway.expose"].enum
	grants      = keyIndex["backends.*.auth.grant"].enum
	// tokenEndpointAuths and signingAlgs are the auth settings' choices.
	tokenEndpointAuths = keyIndex["backends.*.auth.token_endpoint_auth"].enum
	signingAlgs        = keyIndex["backends.*.auth.signing_alg"].enum
)

// onlyKeys returns the backend keys used by transport t alone among the
// transports.
func onlyKeys(t string) []string {
	var out []string
	for _, k := range keyTable {
		if k.parent() == "backends.*" && slices.Contains(k.only, t) {
			out = append(out, k.name())
		}
	}
	return out
}

// bound is the range a numeric setting may take. Values outside it are
// mistakes, not wishes: a 1ms health interval pings every backend a
// thousand times a second, a 1-byte output cap leaves nothing to read.
type bound struct {
	// min and max in the key's unit: nanoseconds for durations, bytes for
	// sizes, a plain count otherwise.
	min, max int64
}

// boundOf returns the bound of a key path, if it has one.
func boundOf(path string) (bound, bool) {
	k, ok := declared(path)
	if !ok || k.min == "" {
		return bound{}, false
	}
	return bound{mustParse(k, k.min), mustParse(k, k.max)}, true
}

// mustParse reads a value written in keyTable in the key's unit. A bad
// one is a programmer error, caught by every test that loads a config.
func mustParse(k key, s string) int64 {
	var n int64
	var err error
	switch k.kind {
	case kindDuration:
		var d time.Duration
		d, err = time.ParseDuration(s)
		n = int64(d)
	case kindSize:
		n, err = parseSize(s)
	default:
		n, err = strconv.ParseInt(s, 10, 64)
	}
	if err != nil {
		panic(fmt.Sprintf("config: keyTable %s: %q: %v", k.path, s, err))
	}
	return n
}

// Typed defaults of keyTable, for the code that fills Gateway and Backend.
func defDuration(path string) time.Duration {
	return time.Duration(mustParse(keyIndex[path], keyIndex[path].def))
}
func defInt(path string) int    { return int(mustParse(keyIndex[path], keyIndex[path].def)) }
func defSize(path string) int64 { return mustParse(keyIndex[path], keyIndex[path].def) }
func defFlag(path string) bool  { return keyIndex[path].def == "true" }

// setFields parses the backend scalars that need no code of their own
// (a field, a fixed default, every transport) and stores them.
func (b *builder) setFields(sc map[string]value, out *Backend) {
	rv := reflect.ValueOf(out).Elem()
	for _, k := range keyTable {
		if !k.plain() {
			continue
		}
		v := b.expand(sc[k.name()])
		f := rv.FieldByName(k.field)
		switch k.kind {
		case kindDuration:
			f.SetInt(int64(b.duration(v, time.Duration(mustParse(k, k.def)))))
		case kindCount:
			d := int(mustParse(k, k.def))
			f.SetInt(int64(b.positive(v, d, d)))
		case kindSize:
			n := b.size(v, k.def)
			if n == 0 {
				n = mustParse(k, k.def)
			}
			f.SetInt(n)
		case kindFlag:
			f.SetBool(b.boolean(v, k.def == "true"))
		}
	}
}

// plain reports whether the builder sets the key by itself (setFields).
func (k key) plain() bool {
	if k.parent() != "backends.*" || k.field == "" || k.def == "" || len(k.only) > 0 {
		return false
	}
	switch k.kind {
	case kindDuration, kindCount, kindSize, kindFlag:
		return true
	}
	return false
}

// SameConnection reports whether two settings of one backend connect the
// same way (every key declared reloadRestart is equal), so a reload can
// keep its session and apply the rest in place.
func SameConnection(a, b Backend) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for _, k := range keyTable {
		if k.parent() != "backends.*" || k.reload != reloadRestart {
			continue
		}
		fa, fb := va.FieldByName(k.field), vb.FieldByName(k.field)
		if eq := fa.MethodByName("Equal"); eq.IsValid() {
			// A type that knows its own equality (Workspace) says it.
			if !eq.Call([]reflect.Value{fb})[0].Bool() {
				return false
			}
			continue
		}
		switch fa.Kind() {
		case reflect.Map, reflect.Slice:
			// nil and empty are the same setting.
			if fa.Len() == 0 && fb.Len() == 0 {
				continue
			}
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			return false
		}
	}
	return true
}

// RestartOnly lists the gateway keys (a whole section as one) whose
// values differ between a and b but which a running kiln reads only at
// start: those keyTable does not declare live. A reload logs them.
func RestartOnly(a, b Gateway) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for _, k := range keyTable {
		if k.effectiveReload() != reloadStart || !strings.HasPrefix(k.path, "gateway.") ||
			k.parent() != "gateway" && !k.atStart {
			continue
		}
		fa, fb := va, vb
		for name := range strings.SplitSeq(strings.TrimPrefix(k.path, "gateway."), ".") {
			fa, fb = fa.FieldByName(gatewayField(name)), fb.FieldByName(gatewayField(name))
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, k.path)
		}
	}
	return out
}

// gatewayField is the Gateway field of a gateway key: its words
// capitalised, initialisms in capitals (state_dir → StateDir, http → HTTP).
func gatewayField(name string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(name, "_") {
		switch w {
		case "http", "url", "id":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
