package sandbox

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// bridgeBackend is one backend object a script can reach, for error hints.
type bridgeBackend struct {
	Name     string   // original name
	Bindings []string // global names bound to the object
	Tools    []string // own property names of the object
}

// ident is the binding a script should write: the first that is a plain
// identifier.
func (b bridgeBackend) ident() string {
	for _, n := range b.Bindings {
		if identRe.MatchString(n) {
			return n
		}
	}
	return b.Bindings[0]
}

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// bound turns the bridge table's bindings into what a script sees: the
// preamble binds a backend's original name too unless a global of the
// hardened runtime (hostGlobals) already holds it.
func (s *Sandbox) bound(bs []bridge.Binding) []bridgeBackend {
	out := make([]bridgeBackend, 0, len(bs))
	for _, b := range bs {
		e := bridgeBackend{Name: b.Name, Bindings: []string{b.Ident}, Tools: b.Tools}
		if b.Name != b.Ident && !s.hostGlobals[b.Name] {
			e.Bindings = append(e.Bindings, b.Name)
		}
		out = append(out, e)
	}
	return out
}

// metaTools are the gateway's own tools (and the names scripts reach
// them by), which scripts sometimes try to call from inside the sandbox.
var metaTools = append(toolcall.MetaToolNames(), "kiln", "mcp")

// hostOnly are globals of other JS hosts that the sandbox deliberately
// lacks.
var hostOnly = []string{"require", "process", "fetch", "setTimeout", "setInterval", "setImmediate",
	"module", "exports", "Buffer", "XMLHttpRequest", "WebSocket", "Deno", "Bun", "window", "document",
	"global", "importScripts", "eval", "BigInt", "Function", "Proxy", "ArrayBuffer", "Uint8Array", "TextEncoder",
	"TextDecoder", "atob", "btoa", "structuredClone", "queueMicrotask", "crypto", "performance"}

var (
	notDefinedRe = regexp.MustCompile(`^ReferenceError: (\S+) is not defined$`)
	noMemberRe   = regexp.MustCompile(`^TypeError: Object has no member '([^']+)'$`)
	declRe       = regexp.MustCompile(`\b(?:const|let|class)\s+([A-Za-z_$][A-Za-z0-9_$]*)`)
)

// hint explains the five mistakes models make most in the sandbox (seed
// 000's table) plus calls of a tool the backend lacks.
func (r *run) hint(header, stack string) string {
	backends := r.backends()
	if backend, ok := r.failures[strings.TrimPrefix(header, "Error: ")]; ok {
		return fmt.Sprintf("backend %q did not answer; it may be down. Read the resource kiln://backend/%s for its state and last stderr lines before retrying; other backends still work", backend, backend)
	}
	if strings.HasPrefix(header, "ReferenceError: Cannot access") {
		if name := r.shadowed(stack, backends); name != "" {
			return fmt.Sprintf("%s is a backend name, and a variable declared with the same name hides it; use a different name, e.g. const %sResult = await %s.…", name, name, name)
		}
	}
	if m := notDefinedRe.FindStringSubmatch(header); m != nil {
		return r.undefinedHint(m[1], backends)
	}
	if m := noMemberRe.FindStringSubmatch(header); m != nil {
		return r.noToolHint(m[1], stack, backends)
	}
	return ""
}

// backends lists what the script can reach, each backend once: the extra
// preamble's bindings replace the compiled ones of the same backend, and a
// compiled backend the gateway no longer serves is left out.
func (r *run) backends() []bridgeBackend {
	var all []bridgeBackend
	seen := map[string]bool{}
	if r.extra != nil {
		for _, b := range r.sb.bound(r.extra.bindings) {
			seen[b.Name] = true
			all = append(all, b)
		}
	}
	var served []string
	if r.sb.opts.Backends != nil {
		served = r.sb.opts.Backends()
	}
	for _, b := range r.sb.bound(r.sb.preamble.bindings) {
		if seen[b.Name] || (served != nil && b.Name != "" && !slices.Contains(served, b.Name)) {
			continue
		}
		seen[b.Name] = true
		all = append(all, b)
	}
	return all
}

func (r *run) undefinedHint(name string, backends []bridgeBackend) string {
	if slices.Contains(metaTools, name) {
		return fmt.Sprintf("%s is one of the gateway's meta-tools, which cannot be called inside call_tool_chain; call it as a separate MCP tool call", name)
	}
	if r.sb.opts.Backends != nil && slices.Contains(r.sb.opts.Backends(), name) {
		return fmt.Sprintf("backend %q is configured but down right now, so its tools are not bound; read the resource kiln://backend/%s for its state and last stderr lines, and retry once it is healthy", name, name)
	}
	var offering []string
	var idents []string
	for _, b := range backends {
		id := b.ident()
		idents = append(idents, id)
		if slices.Contains(b.Tools, name) {
			offering = append(offering, id)
		}
	}
	if len(offering) > 0 {
		return fmt.Sprintf("%s is a tool, not a global; call it on its backend: %s.%s({...})", name, offering[0], name) + alsoOn(offering[1:])
	}
	if s := registry.Closest(name, idents, 1); len(s) > 0 {
		return fmt.Sprintf("there is no backend %s; did you mean %s?", name, s[0])
	}
	if slices.Contains(hostOnly, name) {
		return fmt.Sprintf("the sandbox has no %s: no modules, filesystem, network, timers or code generation. Backend tool calls (backend.tool({...})) are the only way out", name)
	}
	if len(idents) > 0 {
		slices.Sort(idents)
		return "backends are available as globals: " + strings.Join(idents[:min(len(idents), 12)], ", ") + "; use search_tools to find a tool"
	}
	return ""
}

func alsoOn(others []string) string {
	if len(others) == 0 {
		return ""
	}
	return " (also on " + strings.Join(others, ", ") + ")"
}

// shadowed finds which backend name a TDZ error is about: the identifier
// at the error's position, else a declaration of a backend name.
func (r *run) shadowed(stack string, backends []bridgeBackend) string {
	isBackend := func(n string) bool {
		for _, b := range backends {
			if slices.Contains(b.Bindings, n) {
				return true
			}
		}
		return false
	}
	if line, col, ok := r.firstPosition(stack); ok {
		if n := identAt(r.unit.src, line, col); isBackend(n) {
			return n
		}
	}
	for _, m := range declRe.FindAllStringSubmatch(r.unit.src, -1) {
		if isBackend(m[1]) {
			return m[1]
		}
	}
	return ""
}

// identAt returns the identifier starting at a 1-based line and column.
func identAt(src string, line, col int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	runes := []rune(lines[line-1])
	if col < 1 || col > len(runes) {
		return ""
	}
	end := col - 1
	for end < len(runes) && (runes[end] == '_' || runes[end] == '$' || unicode.IsLetter(runes[end]) || unicode.IsDigit(runes[end])) {
		end++
	}
	return string(runes[col-1 : end])
}

// noToolHint explains `backend.nope()`: goja reports only the member.
func (r *run) noToolHint(member, stack string, backends []bridgeBackend) string {
	for _, b := range backends {
		for _, binding := range b.Bindings {
			if !identRe.MatchString(binding) || !strings.Contains(r.unit.src, binding+"."+member) {
				continue
			}
			msg := fmt.Sprintf("backend %s has no tool %s", binding, member)
			if s := registry.Closest(member, b.Tools, 3); len(s) > 0 {
				return msg + "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return msg + fmt.Sprintf("; list its tools with Object.keys(__interfaces[%q]) or search_tools", b.Name)
		}
	}
	return ""
}
