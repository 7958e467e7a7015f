package config

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// builder turns layered, expanded values into a Config.
type builder struct {
	checker
	l     *layered
	lists map[string]entry
	dir   string
}

func (b *builder) gateway() Gateway {
	def := DefaultGateway()
	g := def
	get := func(k string) value { return b.expand(b.l.get("gateway." + k)) }

	if v := get("name"); b.nonEmpty(v, "give kiln a name such as kiln") {
		g.Name = strings.TrimSpace(v.s)
	}
	if v := get("state_dir"); b.nonEmpty(v, "give a folder such as .kiln") {
		g.StateDir = v.s
	}
	g.StateDir = b.abs(g.StateDir)
	b.env.builtin[StateDirVar] = g.StateDir
	g.CallTimeout = b.duration(get("call_timeout"), def.CallTimeout)
	g.ConnectTimeout = b.duration(get("connect_timeout"), def.ConnectTimeout)
	g.MaxOutputSize = b.positive(get("max_output_size"), def.MaxOutputSize, def.MaxOutputSize)
	if v := get("log_level"); !v.bad {
		if lv := b.oneOf(v, logLevels, "log level", nil); lv != "" {
			g.LogLevel = lv
		}
	}
	if v := get("metrics_addr"); v.ok && !v.bad && strings.TrimSpace(v.s) != "" { // "" is off, as the example shows
		g.MetricsAddr = b.hostPort(v, "127.0.0.1:9464")
	}
	g.DrainTimeout = b.duration(get("drain_timeout"), def.DrainTimeout)
	if v := get("state_url"); v.ok && !v.bad && strings.TrimSpace(v.s) != "" {
		g.StateURL = b.stateURL(v)
	}
	g.Sandbox = b.sandbox()
	g.Output = b.output(def.Output)
	g.Health = b.health(def.Health)
	g.Registration = b.registration(def.Registration)
	g.HTTP = b.http(def.HTTP)
	g.Semantic = b.semantic(def.Semantic)
	g.Vectors = b.vectors(def.Vectors)
	g.Audit = b.audit(def.Audit)
	g.Console = b.console()
	g.Expose, g.Pin = b.expose(def.Expose)
	g.Drift = b.drift(get("drift"))
	return g
}

// backend checks and converts one backend. Keys that do not belong to its
// transport are reported, not expanded, so they add no Vars.
func (b *builder) backend(rb *rawBackend, g Gateway) Backend {
	b.refs = nil
	path := "backends." + rb.name
	out := Backend{Name: rb.name}
	sc := map[string]value{}
	for _, k := range backendScalarKeys {
		sc[k] = b.l.get(path + "." + k)
	}
	present := func(k string) bool {
		if v, ok := sc[k]; ok {
			return v.ok
		}
		_, ok := rb.keys[k]
		return ok
	}
	// meant counts a key whose problem is already reported as given, so
	// a typo or a bad shape is not reported a second time as missing.
	meant := func(k string) bool { return present(k) || rb.explained[k] }

	out.Transport = b.transport(rb, sc["transport"], meant)
	switch out.Transport {
	case "":
		// Already reported; checking the rest would guess at intent.
	case TransportWorkspace:
		for _, k := range append(slices.Clone(stdioOnlyKeys), remoteOnlyKeys...) {
			if present(k) {
				b.misplaced(rb, sc, k, "not used by workspace backends; remove it (Bash variables go in bash.env as a list of names)")
			}
		}
		b.workspace(rb, sc, path, g, &out)
	case TransportStdio:
		for _, k := range remoteOnlyKeys {
			if present(k) {
				b.misplaced(rb, sc, k, "not used by stdio backends; remove it or set transport: http (or sse)")
			}
		}
		b.workspaceKeys(rb, sc, present)
		b.stdio(rb, sc, path, &out)
	default:
		b.workspaceKeys(rb, sc, present)
		for _, k := range stdioOnlyKeys {
			if present(k) {
				b.misplaced(rb, sc, k, "not used by the "+out.Transport+" transport; remove it or set transport: stdio")
			}
		}
		b.remote(rb, sc, path, &out)
	}
	out.Timeout = b.duration(b.expand(sc["timeout"]), g.CallTimeout)
	if out.Workspace != nil && !sc["timeout"].ok {
		// A workspace's own deadlines (bash.max_timeout) bound its calls;
		// the gateway's call timeout must not cut them short.
		out.Timeout = max(out.Timeout, out.Workspace.Bash.MaxTimeout+workspaceTimeoutMargin)
	}
	b.setFields(sc, &out)
	if v := sc["drift"]; v.ok && out.Transport == TransportWorkspace {
		b.p.addValue(v, "not used by workspace backends: their tools are kiln's own, served from its source, so there is no manifest to drift from; remove it")
	} else {
		out.Drift = b.drift(b.expand(v))
	}
	out.AcceptFindings = b.acceptFindings(rb, path)
	defMax := defaultMaxConcurrentHTTP
	if out.Transport == TransportStdio {
		defMax = defaultMaxConcurrentStdio
	}
	out.MaxConcurrent = b.positive(b.expand(sc["max_concurrent"]), defMax, defMax)
	out.Vars = sortRefs(b.refs)
	return out
}

// workspaceKeys reports workspace settings on another transport.
func (b *builder) workspaceKeys(rb *rawBackend, sc map[string]value, present func(string) bool) {
	for _, k := range workspaceOnlyKeys {
		if present(k) {
			b.misplaced(rb, sc, k, "only used by workspace backends; remove it or set transport: workspace")
		}
	}
}

// transport decides the transport: as declared, or stdio when only a
// command is given. A url alone is not enough: http and sse differ.
func (b *builder) transport(rb *rawBackend, v value, meant func(string) bool) string {
	path := "backends." + rb.name
	if !v.ok && rb.explained["transport"] {
		return ""
	}
	if v.ok {
		v = b.expand(v)
		if v.bad {
			return ""
		}
		return b.oneOf(v, transports, "transport", transportAliases)
	}
	switch {
	case meant("command"):
		return TransportStdio
	case meant("root"):
		b.p.add(rb.line, path+".transport", "missing; add transport: workspace to serve kiln's file and shell tools over root")
	case meant("url"):
		b.p.add(rb.line, path+".transport", "missing; add transport: http (streamable HTTP) or transport: sse (legacy HTTP+SSE)")
	default:
		b.p.add(rb.line, path, "no transport; add transport: stdio with a command, or transport: http with a url")
	}
	return ""
}

func (b *builder) stdio(rb *rawBackend, sc map[string]value, path string, out *Backend) {
	cmd := sc["command"]
	if !cmd.ok && !rb.explained["command"] {
		b.p.add(rb.line, path+".command", "missing; stdio backends need the program to run, e.g. command: npx")
	} else if cmd.ok {
		if cmd = b.expand(cmd); b.nonEmpty(cmd, "give the program to run, e.g. command: npx") {
			out.Command = cmd.s
		}
	}
	if e, ok := rb.keys["args"]; ok {
		for i, n := range e.val.Content {
			out.Args = append(out.Args, b.node(path+".args["+strconv.Itoa(i)+"]", deref(n)).s)
		}
	}
	out.Env = b.strMap(rb, "env", path)
	out.Cwd = b.dir
	if v := sc["cwd"]; v.ok {
		if v = b.expand(v); !v.bad && v.s != "" {
			out.Cwd = b.abs(v.s)
		}
	}
}

func (b *builder) remote(rb *rawBackend, sc map[string]value, path string, out *Backend) {
	example := "http://127.0.0.1:3101/mcp"
	if out.Transport == TransportSSE {
		example = "http://127.0.0.1:3101/sse"
	}
	u := sc["url"]
	switch {
	case !u.ok && !rb.explained["url"]:
		b.p.add(rb.line, path+".url", "missing; %s backends need the server's address, e.g. url: %s", out.Transport, example)
	case !u.ok:
	default:
		if u = b.expand(u); b.nonEmpty(u, "give the server's address, e.g. "+example) {
			b.httpURL(u, example)
			out.URL = strings.TrimSpace(u.s)
		}
	}
	out.Headers = b.strMap(rb, "headers", path)
	out.Auth = b.auth(rb, path)
}

// strMap expands an env or headers mapping, keeping its keys' case.
func (b *builder) strMap(rb *rawBackend, key, path string) map[string]string {
	e, ok := rb.keys[key]
	if !ok || e.val.Kind != yaml.MappingNode || len(e.val.Content) == 0 {
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := deref(e.val.Content[i]), deref(e.val.Content[i+1])
		val := b.node(keyPath(path+"."+key, k.Value), v)
		if key == "headers" && strings.ContainsAny(val.s, "\r\n") {
			b.p.addValue(val, "contains a line break; header values are one line")
		}
		out[k.Value] = val.s
	}
	return out
}

// misplaced reports a key that the backend's transport does not use.
func (b *builder) misplaced(rb *rawBackend, sc map[string]value, k, msg string) {
	if v, ok := sc[k]; ok {
		b.p.addValue(v, "%s", msg)
		return
	}
	b.p.add(rb.keys[k].key.Line, "backends."+rb.name+"."+k, "%s", msg)
}

// abs resolves p against the config's folder.
func (b *builder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(b.dir, p)
}

// sortRefs sorts by name then key and drops repeats.
func sortRefs(refs []VarRef) []VarRef {
	slices.SortFunc(refs, func(a, b VarRef) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return slices.Compact(refs)
}
