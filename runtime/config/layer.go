package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/viper"
)

// layered holds the scalar settings layered by viper: defaults < file <
// KILN_… environment overrides.
//
// Viper is fed the file's scalars as written (strings) from the node tree
// rather than the raw bytes: it lowercases keys, which would break env and
// header names, and re-types values (a name like 2024-01-01 would become a
// time). Lists and maps are read from the node tree directly.
type layered struct {
	v *viper.Viper
	// from maps a key path to the KILN_ variable that overrode it.
	from map[string]string
	// lines maps a key path to its line in the file.
	lines map[string]int
}

// layer builds the layers for d. Overrides are looked up through env rather
// than viper's AutomaticEnv so tests can inject the environment, and so .env
// values can override too.
func layer(d *document, env lookup) *layered {
	l := &layered{v: viper.New(), from: map[string]string{}, lines: map[string]int{}}
	// The gateway's own scalars start from their declared defaults; the
	// builder reads the rest's defaults from keyTable itself.
	for _, k := range keyTable {
		if k.parent() == "gateway" && k.isScalar() && k.def != "" {
			l.v.SetDefault(k.path, k.def)
		}
	}

	file := map[string]any{}
	var keys []string
	for _, path := range slices.Sorted(maps.Keys(sectionKeys)) {
		for k, e := range d.settings[path] {
			section(file, path)[k] = e.val.Value
			l.lines[path+"."+k] = e.key.Line
		}
		keys = append(keys, prefixed(path+".", scalarKeys(path))...)
	}
	bs := map[string]any{}
	for _, b := range d.backends {
		m := map[string]any{}
		for _, k := range backendScalarKeys {
			if e, ok := b.keys[k]; ok {
				m[k] = e.val.Value
				l.lines["backends."+b.name+"."+k] = e.key.Line
			}
		}
		bs[b.name] = m
		keys = append(keys, prefixed("backends."+b.name+".", backendScalarKeys)...)
	}
	file["backends"] = bs
	// MergeConfigMap only fails on a nil map.
	_ = l.v.MergeConfigMap(file)

	for _, k := range keys {
		name := overrideName(k)
		if v, ok := env.get(name); ok && v != "" {
			l.v.Set(k, v)
			l.from[k] = name
		}
	}
	return l
}

// get returns the winning layer's value for key, as a value ready to expand.
func (l *layered) get(key string) value {
	v := value{key: key, env: l.from[key]}
	if v.env == "" {
		v.line = l.lines[key]
	}
	if l.v.IsSet(key) {
		v.raw, v.ok = l.v.GetString(key), true
	}
	return v
}

// section returns the map at dotted path inside m, creating it as needed.
func section(m map[string]any, path string) map[string]any {
	for k := range strings.SplitSeq(path, ".") {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	return m
}

func prefixed(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}
