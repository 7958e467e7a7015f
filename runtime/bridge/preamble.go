package bridge

import (
	"bytes"
	"encoding/json"
)

// prelude and epilogue wrap the generated bindings. Everything runs inside
// one strict-mode IIFE so the preamble's helpers never leak into the
// script's scope; only the backend objects, __interfaces and
// __getToolInterface land on globalThis.
//
// Bindings are configurable, non-writable properties of globalThis rather
// than top-level const declarations, so a script may still declare its own
// `const github = ...` without a redeclaration error, and an accidental
// assignment cannot replace a backend. A name some host global already uses
// is never aliased, and a binding the host forbids is skipped rather than
// aborting the whole preamble.
//
// __kiln_call is captured once so a script that overwrites the global cannot
// redirect other tools' calls.
const prelude = `(function () {
"use strict";
const call = __kiln_call;
const define = (o, k, v) => Object.defineProperty(o, k, {value: v, enumerable: false, writable: false, configurable: true});
const put = (k, v) => { try { define(globalThis, k, v); } catch (e) { /* host-owned name */ } };
const bind = (ident, name, o) => {
  Object.freeze(o);
  put(ident, o);
  if (name !== ident && !(name in globalThis)) put(name, o);
};
let o;
`

// The interface data is parsed on first use: most scripts never look at it,
// and JSON.parse of every schema would otherwise cost each run. JSON.parse
// also keeps a tool named "__proto__" an own property, which an object
// literal would not.
const epilogue = `let cache;
const has = (o, k) => o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);
const deepFreeze = (v) => {
  if (v !== null && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze(v[k]);
  }
  return v;
};
const load = () => {
  if (cache === undefined) cache = deepFreeze(JSON.parse(data));
  return cache;
};
const backendOf = (d, b) => has(d.backends, b) ? d.backends[b] : (has(d.interfaces, b) ? b : undefined);
const toolOf = (d, b, t, idents) => {
  if (idents) return has(d.tools[b], t) ? d.tools[b][t] : undefined;
  return has(d.interfaces[b], t) ? t : undefined;
};
Object.defineProperty(globalThis, "__interfaces", {get: () => load().interfaces, enumerable: false, configurable: true});
put("__getToolInterface", function __getToolInterface(name) {
  const d = load();
  const s = String(name);
  for (let dot = s.indexOf("."); dot > 0; dot = s.indexOf(".", dot + 1)) {
    const b = backendOf(d, s.slice(0, dot));
    if (b !== undefined) {
      const t = toolOf(d, b, s.slice(dot + 1), true) ?? toolOf(d, b, s.slice(dot + 1), false);
      if (t !== undefined) return d.interfaces[b][t];
    }
  }
  const names = Object.keys(d.interfaces).sort();
  for (const idents of [false, true]) {
    for (const b of names) {
      const t = toolOf(d, b, s, idents);
      if (t !== undefined) return d.interfaces[b][t];
    }
  }
  return null;
});
})();
`

// iface is one entry of __interfaces.
type iface struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// data is what __interfaces and __getToolInterface read: interfaces keyed by
// original names, and the identifier → name maps of Table.
type data struct {
	Interfaces map[string]map[string]iface  `json:"interfaces"`
	Backends   map[string]string            `json:"backends"`
	Tools      map[string]map[string]string `json:"tools"`
}

// Preamble returns the bridge preamble for backends. The output depends only
// on the input set: backends and tools are sorted, maps are encoded with
// sorted keys, and names reach __kiln_call as JSON string literals, which
// are valid JavaScript for any string (encoding/json escapes quotes,
// backslashes, control characters, U+2028/U+2029 and '<', so not even
// "</script>" survives literally).
func Preamble(backends []Backend) []byte {
	t := Lookup(backends)
	d := data{
		Interfaces: make(map[string]map[string]iface, len(t.backends)),
		Backends:   make(map[string]string, len(t.backends)),
		Tools:      make(map[string]map[string]string, len(t.backends)),
	}
	var b bytes.Buffer
	b.WriteString(prelude)
	for _, e := range t.backends {
		bname := jsString(e.name)
		b.WriteString("// backend " + bname + "\no = {\n")
		for _, tl := range e.tools {
			b.WriteString("  " + e.toolIdent[tl.Name] + ": async (args) => call(" + bname + ", " + jsString(tl.Name) + ", args),\n")
		}
		b.WriteString("};\n")
		for _, tl := range e.tools {
			if id := e.toolIdent[tl.Name]; id != tl.Name {
				b.WriteString("define(o, " + jsString(tl.Name) + ", o." + id + ");\n")
			}
		}
		b.WriteString("bind(" + jsString(e.ident) + ", " + bname + ", o);\n")

		ifs := make(map[string]iface, len(e.tools))
		for _, tl := range e.tools {
			schema := tl.InputSchema
			if !json.Valid(schema) {
				schema = json.RawMessage("null")
			}
			ifs[tl.Name] = iface{Name: tl.Name, Description: tl.Description, InputSchema: schema}
		}
		d.Interfaces[e.name] = ifs
		d.Backends[e.ident] = e.name
		d.Tools[e.name] = e.toolByIdent
	}
	raw, err := json.Marshal(d)
	if err != nil {
		// Unreachable: every schema was checked with json.Valid and the
		// rest is strings.
		raw = []byte(`{"interfaces":{},"backends":{},"tools":{}}`)
	}
	b.WriteString("const data = " + jsString(string(raw)) + ";\n")
	b.WriteString(epilogue)
	return b.Bytes()
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// Unbind returns a script that removes the named backends' globals which
// an earlier preamble bound (its identifier and, when it was bound, its
// original name), so a backend compiled in but left out of the running
// config is not reachable from a program. A global the host owns is left
// alone: only a name still holding the backend's object is deleted.
func Unbind(backends []Backend) string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.Name
	}
	return Lookup(backends).Unbind(names...)
}

// Unbind is the package's Unbind for the named backends of the preamble t
// describes, with the identifiers that preamble gave them (which depend on
// every name it bound, not only these); names t does not hold are skipped.
func (t *Table) Unbind(names ...string) string {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var b bytes.Buffer
	for _, e := range t.backends {
		if !want[e.name] {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(`(function () {
"use strict";
const drop = (ident, name) => {
  const o = globalThis[ident];
  if (o === null || typeof o !== "object" || !Object.isFrozen(o)) return;
  try { delete globalThis[ident]; } catch (e) { return; }
  if (name !== ident && globalThis[name] === o) { try { delete globalThis[name]; } catch (e) {} }
};
`)
		}
		b.WriteString("drop(" + jsString(e.ident) + ", " + jsString(e.name) + ");\n")
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("})();\n")
	return b.String()
}
