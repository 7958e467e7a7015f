package bridge

import (
	"bytes"
	"sort"
)

// Hide returns a script that removes the named tools from the backend
// objects an earlier preamble (the one t describes) bound, and from
// __interfaces and __getToolInterface, so a program run for an identity
// the policy denies them does not find them; "" when nothing is hidden.
// denied maps a backend's original name to its tools' original names.
//
// Backend objects are frozen, so each is replaced by a frozen copy without
// the tools, under every global name that still holds the original. The
// calls would be refused anyway (the host decides every call); this keeps
// introspection from listing what the identity may not use.
func (t *Table) Hide(denied map[string][]string) string {
	var b bytes.Buffer
	names := make([]string, 0, len(denied))
	for n := range denied {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		e, ok := t.byName[name]
		if !ok || len(denied[name]) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(hideHead)
		}
		var props []string
		for _, tool := range denied[name] {
			props = append(props, tool)
			if id, ok := e.toolIdent[tool]; ok && id != tool {
				props = append(props, id)
			}
		}
		b.WriteString("hide(" + jsString(e.ident) + ", " + jsString(e.name) + ", " + jsList(denied[name]) + ", " + jsList(props) + ");\n")
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString(hideTail)
	return b.String()
}

const hideHead = `(function () {
"use strict";
const G = globalThis, O = Object;
const ifd = O.getOwnPropertyDescriptor(G, "__interfaces");
const all = ifd && ifd.get ? ifd.get() : undefined;
const gone = new Set();
const trimmed = {};
const copy = (o, drop) => {
  const c = {};
  for (const k of O.getOwnPropertyNames(o)) if (!drop.includes(k)) O.defineProperty(c, k, O.getOwnPropertyDescriptor(o, k));
  return O.freeze(c);
};
const hide = (ident, name, tools, props) => {
  const o = G[ident];
  if (o !== null && typeof o === "object") {
    const c = copy(o, props);
    for (const n of [ident, name]) {
      const d = O.getOwnPropertyDescriptor(G, n);
      if (d && d.value === o) { try { O.defineProperty(G, n, {value: c, enumerable: false, writable: false, configurable: true}); } catch (e) {} }
    }
  }
  if (all && O.prototype.hasOwnProperty.call(all, name)) {
    for (const t of tools) if (O.prototype.hasOwnProperty.call(all[name], t)) gone.add(all[name][t]);
    trimmed[name] = copy(all[name], tools);
  }
};
`

const hideTail = `if (all) {
  const view = {};
  for (const k of O.keys(all)) view[k] = trimmed[k] || all[k];
  O.freeze(view);
  O.defineProperty(G, "__interfaces", {get: () => view, enumerable: false, configurable: true});
  const find = G.__getToolInterface;
  if (typeof find === "function") {
    O.defineProperty(G, "__getToolInterface", {value: function __getToolInterface(name) {
      const r = find(name);
      return gone.has(r) ? null : r;
    }, enumerable: false, writable: false, configurable: true});
  }
}
})();
`

func jsList(ss []string) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsString(s))
	}
	b.WriteByte(']')
	return b.String()
}
