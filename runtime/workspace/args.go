package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// argSchema is the part of a tool's input schema Call enforces before the
// tool decodes its arguments: the gateway validates them too, but a
// workspace called in process (tests, kiln-gen record) must refuse the
// same input, with the same ranges, so the schema is the one source.
type argSchema struct {
	Properties map[string]struct {
		Type    string   `json:"type"`
		Minimum *float64 `json:"minimum"`
		Maximum *float64 `json:"maximum"`
		Enum    []string `json:"enum"`
	} `json:"properties"`
	Required []string `json:"required"`
	// Closed is additionalProperties: false.
	Closed bool
	known  []string // property names, sorted
}

var (
	argSchemasOnce sync.Once
	argSchemas     map[string]*argSchema
)

func schemaOf(t Tool) *argSchema {
	argSchemasOnce.Do(func() {
		argSchemas = map[string]*argSchema{}
		for _, t := range tools {
			var s argSchema
			var extra struct {
				Additional *bool `json:"additionalProperties"`
			}
			if err := json.Unmarshal(t.InputSchema, &s); err != nil {
				panic("workspace tool schema " + t.Name + ": " + err.Error())
			}
			_ = json.Unmarshal(t.InputSchema, &extra)
			s.Closed = extra.Additional != nil && !*extra.Additional
			for k := range s.Properties {
				s.known = append(s.known, k)
			}
			slices.Sort(s.known)
			argSchemas[t.Name] = &s
		}
	})
	return argSchemas[t.Name]
}

// checkArgs refuses arguments t's schema does not allow, saying what it
// does allow: unknown names (with the known ones), wrong types, integers
// that are not whole or out of range, values outside an enum, and
// missing required ones.
func checkArgs(t Tool, raw json.RawMessage) error {
	s := schemaOf(t)
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return fmt.Errorf("arguments must be a JSON object; %s takes %s", t.Name, s.knownText())
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		p, ok := s.Properties[name]
		if !ok {
			if s.Closed {
				return fmt.Errorf("unknown argument %q; %s takes %s", name, t.Name, s.knownText())
			}
			continue
		}
		v := bytes.TrimSpace(args[name])
		if string(v) == "null" {
			continue // as if absent
		}
		switch p.Type {
		case "string":
			var str string
			if json.Unmarshal(v, &str) != nil {
				return fmt.Errorf("argument %q: want a string, got %s", name, cut(string(v), 40))
			}
			if len(p.Enum) > 0 && !slices.Contains(p.Enum, str) {
				return fmt.Errorf("argument %q: %q is not one of %s", name, cut(str, 40), strings.Join(p.Enum, ", "))
			}
		case "boolean":
			if string(v) != "true" && string(v) != "false" {
				return fmt.Errorf("argument %q: want true or false, got %s", name, cut(string(v), 40))
			}
		case "integer":
			var f float64
			if json.Unmarshal(v, &f) != nil {
				return fmt.Errorf("argument %q: want an integer, got %s", name, cut(string(v), 40))
			}
			if f != math.Trunc(f) || math.IsInf(f, 0) {
				return fmt.Errorf("argument %q: want a whole number, got %s", name, cut(string(v), 40))
			}
			if (p.Minimum != nil && f < *p.Minimum) || (p.Maximum != nil && f > *p.Maximum) || math.Abs(f) > 1<<53 {
				return fmt.Errorf("argument %q: %s is out of range; give %s", name, cut(string(v), 40), rangeText(p.Minimum, p.Maximum))
			}
		}
	}
	for _, r := range s.Required {
		if v, ok := args[r]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return fmt.Errorf("argument %q is required; %s takes %s", r, t.Name, s.knownText())
		}
	}
	return nil
}

func (s *argSchema) knownText() string {
	if len(s.known) == 0 {
		return "no arguments ({})"
	}
	return strings.Join(s.known, ", ")
}

func rangeText(lo, hi *float64) string {
	n := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("a whole number from %s to %s", n(lo), n(hi))
	case lo != nil:
		return fmt.Sprintf("a whole number of at least %s", n(lo))
	case hi != nil:
		return fmt.Sprintf("a whole number of at most %s", n(hi))
	}
	return fmt.Sprintf("a whole number within ±%d", int64(1)<<53)
}
