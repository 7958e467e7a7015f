package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// document is what parse keeps of a kiln.yaml: the YAML nodes of each
// setting, with keys exactly as written.
type document struct {
	// settings maps a section's path ("gateway", "gateway.sandbox") to its
	// scalar settings by key.
	settings map[string]map[string]entry
	// lists maps a key path of sectionListKeys to its entry.
	lists    map[string]entry
	backends []*rawBackend // in file order
	policies []Policy      // in file order
	profiles []Profile     // in file order
}

// rawBackend is one backend's settings as written.
type rawBackend struct {
	name string
	line int
	keys map[string]entry
	// explained holds the keys whose absence from keys a problem already
	// explains (a bad shape, or an unknown key suggested as this one), so
	// the other checks still run without repeating it ("comand: unknown
	// key" then "command: missing").
	explained map[string]bool
}

// entry is one key and its value, aliases resolved.
type entry struct {
	key, val *yaml.Node
}

// parser walks the node tree against the version 1 key set.
type parser struct {
	p *problems
}

// parse checks the structure of data and returns its settings, or nil when
// nothing more can be checked (bad YAML, wrong version).
func parse(data []byte, ps *problems) *document {
	pr := parser{p: ps}
	top := pr.root(data)
	if top == nil {
		return nil
	}
	ents, _ := pr.entries(top, "")
	if !pr.version(top, ents) {
		return nil
	}
	d := &document{settings: map[string]map[string]entry{}, lists: map[string]entry{}}
	for _, e := range ents {
		switch k := e.key.Value; k {
		case "version":
		case "gateway":
			pr.section(e, "gateway", d)
		case "backends":
			d.backends = pr.backends(e)
		case "policies":
			d.policies = pr.policies(e)
		case "profiles":
			d.profiles = pr.profiles(e)
		default:
			pr.unknown(e.key, "", topKeys)
		}
	}
	return d
}

// root decodes the single YAML document in data and returns its top mapping.
func (pr parser) root(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			pr.p.add(0, "", "empty config; start it with version: 1")
		} else {
			pr.yamlError(err)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			pr.yamlError(err)
		} else {
			pr.p.add(firstLine(&extra), "", "more than one YAML document (---); keep a single document")
		}
		return nil
	}
	var top *yaml.Node
	if len(doc.Content) > 0 {
		top = deref(doc.Content[0])
	}
	switch {
	case top == nil || isNull(top):
		pr.p.add(0, "", "empty config; start it with version: 1")
		return nil
	case top.Kind != yaml.MappingNode:
		pr.p.add(top.Line, "", "the top level is %s; want a mapping with version, gateway and backends", kind(top))
		return nil
	}
	return top
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (pr parser) yamlError(err error) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		pr.p.add(n, "", "invalid YAML: %s", m[2])
		return
	}
	pr.p.add(0, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// version reports whether the file declares the version this build reads.
func (pr parser) version(top *yaml.Node, ents []entry) bool {
	i := slices.IndexFunc(ents, func(e entry) bool { return e.key.Value == "version" })
	if i < 0 {
		pr.p.add(top.Line, "version", "missing; add version: %d as the first line", Version)
		return false
	}
	v := ents[i].val
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Value != strconv.Itoa(Version) {
		pr.p.add(v.Line, "version", "unsupported version %s; this kiln reads version: %d", strconv.Quote(v.Value), Version)
		return false
	}
	return true
}

// entries returns the pairs of mapping n, reporting duplicate keys (which
// decoding into a map would silently merge), merge keys and complex keys.
// The first of duplicate keys wins. ok is false if anything was reported.
func (pr parser) entries(n *yaml.Node, path string) (ents []entry, ok bool) {
	ok = true
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		switch {
		case k == nil || v == nil || k.Kind != yaml.ScalarNode:
			pr.p.add(n.Content[i].Line, path, "keys must be plain names, not lists or mappings")
		case k.ShortTag() == "!!merge":
			pr.p.add(k.Line, path+".<<", "merge keys are not supported; write the keys out")
		case seen[k.Value] > 0:
			what := "set"
			if path == "backends" {
				what = "declared"
			}
			pr.p.add(k.Line, keyPath(path, k.Value), "%s twice (first at line %d); remove or rename one", what, seen[k.Value])
		default:
			seen[k.Value] = k.Line
			ents = append(ents, entry{key: k, val: v})
			continue
		}
		ok = false
	}
	return ents, ok
}

// section parses the mapping of settings at path (a key of sectionKeys)
// and the sections nested in it into d.
func (pr parser) section(e entry, path string, d *document) {
	if isNull(e.val) {
		return
	}
	if e.val.Kind != yaml.MappingNode {
		pr.p.add(e.val.Line, path, "is %s; want a mapping of settings", kind(e.val))
		return
	}
	known := sectionKeys[path]
	ents, _ := pr.entries(e.val, path)
	out := map[string]entry{}
	for _, s := range ents {
		kp := keyPath(path, s.key.Value)
		_, nested := sectionKeys[kp]
		switch {
		case !slices.Contains(known, s.key.Value):
			pr.unknown(s.key, path, known)
		case nested:
			pr.section(s, kp, d)
		case sectionListKeys[kp]:
			if pr.list(s.val, kp) {
				d.lists[kp] = s
			}
		case pr.scalar(s.val, kp):
			out[s.key.Value] = s
		}
	}
	d.settings[path] = out
}

// backends parses the backends mapping.
func (pr parser) backends(e entry) []*rawBackend {
	if isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		pr.p.add(e.val.Line, "backends", "is %s; want a mapping from backend names to their settings", kind(e.val))
		return nil
	}
	ents, _ := pr.entries(e.val, "backends")
	var out []*rawBackend
	prefixes := map[string]string{}
	for _, be := range ents {
		name := be.key.Value
		path := keyPath("backends", name)
		if !pr.name(be.key, path) {
			// Its settings are still checked for shape and unknown keys;
			// values are layered by name, which this one cannot carry.
			pr.backend(be, path)
			continue
		}
		if other, dup := prefixes[overrideName(name)]; dup {
			pr.p.add(be.key.Line, path, "shares the override prefix %s_ with backends.%s; rename one", overrideName("backends."+name), other)
			pr.backend(be, path)
			continue
		}
		prefixes[overrideName(name)] = name
		out = append(out, pr.backend(be, path))
	}
	return out
}

// name checks a backend name.
func (pr parser) name(k *yaml.Node, path string) bool {
	name := k.Value
	switch {
	case !nameRE.MatchString(name):
		pr.p.add(k.Line, path, "invalid backend name; names start with a lowercase letter followed by lowercase letters, digits, - or _ (try %s)", strconv.Quote(fixName(name)))
	case slices.Contains(reservedNames, name):
		pr.p.add(k.Line, path, "reserved name (kiln and its meta-tools use it); rename the backend, e.g. %s", strconv.Quote(name+"-server"))
	default:
		return true
	}
	return false
}

// fixName turns an invalid backend name into a valid one for the hint.
func fixName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "b" + s
	}
	return s
}

// backend parses one backend's settings.
func (pr parser) backend(be entry, path string) *rawBackend {
	b := &rawBackend{name: be.key.Value, line: be.key.Line, keys: map[string]entry{}, explained: map[string]bool{}}
	if isNull(be.val) || be.val.Kind != yaml.MappingNode {
		pr.p.add(be.key.Line, path, "is %s; want settings such as transport: stdio and command: npx", kind(be.val))
		b.explainAll()
		return b
	}
	ents, ok := pr.entries(be.val, path)
	if !ok {
		// A merge or complex key hides what the backend meant to set.
		b.explainAll()
	}
	for _, e := range ents {
		k := e.key.Value
		kp := keyPath(path, k)
		good := true
		switch k {
		case "args", "accept_findings":
			good = pr.list(e.val, kp)
		case "env":
			good = pr.strMap(e.val, kp, checkEnvName)
		case "headers":
			good = pr.strMap(e.val, kp, checkHeaderName)
		case "bash":
			good = pr.bash(e.val, kp)
		case "lsp":
			good = pr.lsp(e.val, kp)
		case "auth":
			good = pr.auth(e.val, kp)
		default:
			if !slices.Contains(backendKeys, k) {
				if s := pr.unknown(e.key, path, backendKeys); s != "" {
					b.explained[s] = true
				}
				continue
			}
			good = pr.scalar(e.val, kp)
		}
		if good {
			b.keys[k] = e
		} else {
			b.explained[k] = true
		}
	}
	return b
}

// explainAll marks every key as explained: the backend's settings could
// not be read as a whole, so none is reported missing.
func (b *rawBackend) explainAll() {
	for _, k := range backendKeys {
		b.explained[k] = true
	}
}

// bash checks a workspace backend's bash section: scalars, and env as a
// list of variable names.
func (pr parser) bash(n *yaml.Node, path string) bool {
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want settings such as timeout: 2m and network: false", kind(n))
		return false
	}
	ents, ok := pr.entries(n, path)
	for _, e := range ents {
		kp := keyPath(path, e.key.Value)
		switch {
		case !slices.Contains(bashKeys, e.key.Value):
			pr.unknown(e.key, path, bashKeys)
			ok = false
		case e.key.Value == "env":
			if e.val.Kind == yaml.MappingNode {
				pr.p.add(e.val.Line, kp, "is a mapping; bash.env lists the names of kiln's variables passed through, e.g. [GOPATH, GOFLAGS]")
				ok = false
				continue
			}
			ok = pr.list(e.val, kp) && ok
		default:
			ok = pr.scalar(e.val, kp) && ok
		}
	}
	return ok
}

// lsp checks a workspace backend's lsp section: idle, and servers as a
// mapping of known languages to non-empty commands.
func (pr parser) lsp(n *yaml.Node, path string) bool {
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want settings such as idle: 10m and servers: {go: [gopls]}", kind(n))
		return false
	}
	ents, ok := pr.entries(n, path)
	for _, e := range ents {
		kp := keyPath(path, e.key.Value)
		switch e.key.Value {
		case "idle":
			ok = pr.scalar(e.val, kp) && ok
		case "servers":
			ok = pr.lspServers(e.val, kp) && ok
		default:
			pr.unknown(e.key, path, lspKeys)
			ok = false
		}
	}
	return ok
}

func (pr parser) lspServers(n *yaml.Node, path string) bool {
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a language to its server's command, e.g. go: [gopls] or python: [pyright-langserver, --stdio]", kind(n))
		return false
	}
	ents, ok := pr.entries(n, path)
	for _, e := range ents {
		kp := keyPath(path, e.key.Value)
		if !slices.Contains(LSPLanguages, e.key.Value) {
			pr.p.add(e.key.Line, kp, "%s is not a language kiln runs a server for; use one of %s", strconv.Quote(e.key.Value), strings.Join(LSPLanguages, ", "))
			ok = false
			continue
		}
		if e.val.Kind != yaml.SequenceNode || len(e.val.Content) == 0 {
			pr.p.add(e.val.Line, kp, "is %s; want the command and its arguments as a list, e.g. [%s]", kind(e.val), strings.Join(DefaultLSPServers[e.key.Value], ", "))
			ok = false
			continue
		}
		ok = pr.list(e.val, kp) && ok
	}
	return ok
}

// scalar reports whether n is a single non-null value.
func (pr parser) scalar(n *yaml.Node, path string) bool {
	switch {
	case isNull(n):
		pr.p.add(n.Line, path, `empty value; give a value (quote an empty string as "") or remove the key`)
	case n.Kind != yaml.ScalarNode:
		pr.p.add(n.Line, path, "is %s; want a single value", kind(n))
	default:
		return true
	}
	return false
}

// list checks a list of scalars (args).
func (pr parser) list(n *yaml.Node, path string) bool {
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.SequenceNode {
		example := `["--port", "3000"]`
		if sectionListKeys[path] {
			example = `["` + n.Value + `"]`
		}
		pr.p.add(n.Line, path, `is %s; want a list such as %s`, kind(n), example)
		return false
	}
	ok := true
	for i, item := range n.Content {
		ok = pr.scalar(deref(item), path+"["+strconv.Itoa(i)+"]") && ok
	}
	return ok
}

// strMap checks a mapping of names to scalars (env, headers).
func (pr parser) strMap(n *yaml.Node, path string, checkName func(string) string) bool {
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a mapping of names to values", kind(n))
		return false
	}
	ents, ok := pr.entries(n, path)
	for _, e := range ents {
		kp := keyPath(path, e.key.Value)
		if msg := checkName(e.key.Value); msg != "" {
			pr.p.add(e.key.Line, kp, "%s", msg)
			ok = false
			continue
		}
		if isNull(e.val) && strings.HasSuffix(path, ".env") {
			pr.p.add(e.val.Line, kp, `empty value; write "" for an empty string or ${%s} to pass the variable through`, e.key.Value)
			ok = false
			continue
		}
		ok = pr.scalar(e.val, kp) && ok
	}
	return ok
}

func checkEnvName(name string) string {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return "invalid variable name; names cannot be empty or contain = or NUL"
	}
	return ""
}

func checkHeaderName(name string) string {
	if name == "" {
		return "empty header name"
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return "invalid header name; use letters, digits and - (e.g. Authorization, X-Api-Key)"
		}
	}
	return ""
}

// unknown reports a key that does not exist at path, with the likely fix,
// and returns the key it suggested, if any.
func (pr parser) unknown(k *yaml.Node, path string, known []string) string {
	if s := suggest(k.Value, known); s != "" {
		pr.p.add(k.Line, keyPath(path, k.Value), "unknown key; did you mean %s?", strconv.Quote(s))
		return s
	}
	pr.p.add(k.Line, keyPath(path, k.Value), "unknown key; the keys here are %s", listOr(known))
	return ""
}

// deref follows aliases, returning a copy of the target positioned at the
// alias so problems point where the value is used. Anchors cannot sit on
// aliases, so one step suffices; the bound keeps hostile input from looping.
func deref(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.AliasNode {
		return n
	}
	t := n.Alias
	for i := 0; t != nil && t.Kind == yaml.AliasNode && i < 8; i++ {
		t = t.Alias
	}
	if t == nil || t.Kind == yaml.AliasNode {
		return nil
	}
	c := *t
	c.Line, c.Column = n.Line, n.Column
	return &c
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kind(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "empty"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	return "a single value"
}

func firstLine(doc *yaml.Node) int {
	if doc.Line > 0 || len(doc.Content) == 0 {
		return doc.Line
	}
	return doc.Content[0].Line
}
