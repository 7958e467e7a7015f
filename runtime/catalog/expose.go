package catalog

import (
	"encoding/json"
	"strings"
)

// Bare reports whether a backend's tools are exposed under their own names
// (backends.NAME.bare, or "bare" in its register_manual definition). It
// takes no lock, so OnChange callbacks may call it.
func (c *Catalog) Bare(name string) bool {
	m := c.bare.Load()
	return m != nil && (*m)[name]
}

// publishBareLocked records which backends are bare, from the config in
// force and the runtime registrations.
func (c *Catalog) publishBareLocked() {
	m := map[string]bool{}
	for _, b := range c.cfg.Backends {
		if b.Bare {
			m[b.Name] = true
		}
	}
	for name, def := range c.dynamic {
		if dynamicBare(def) {
			m[name] = true
		}
	}
	c.bare.Store(&m)
}

// dynamicBare reads "bare" from a registration that config.ParseBackend
// already accepted, so its value is true, false or their string forms.
func dynamicBare(def json.RawMessage) bool {
	var d struct {
		Bare any `json:"bare"`
	}
	if json.Unmarshal(def, &d) != nil {
		return false
	}
	switch v := d.Bare.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return false
}
