package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithDefaults(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name":  map[string]any{"type": "string", "default": "Ada"},
		"age":   map[string]any{"type": "integer", "default": 36},
		"email": map[string]any{"type": "string"},
	}}
	tests := []struct {
		name          string
		content, want any
	}{
		{"empty answer gets every default", map[string]any{}, map[string]any{"name": "Ada", "age": float64(36)}},
		{"nil answer gets every default", nil, map[string]any{"name": "Ada", "age": float64(36)}},
		{"given values win", map[string]any{"name": "Grace", "email": "g@x"}, map[string]any{"name": "Grace", "age": float64(36), "email": "g@x"}},
		{"non-object answer untouched", "yes", "yes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withDefaults(schema, tc.content)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
