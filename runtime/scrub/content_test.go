package scrub

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestContentKeepsBinary(t *testing.T) {
	sc := New(Options{})
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	for _, c := range []struct{ in, keep, drop string }{
		{`{"uri":"x://1","blob":"` + secret + `","text":"` + secret + `"}`, `"blob":"` + secret + `"`, `"text":"` + secret + `"`},
		{`{"type":"image","data":"` + secret + `","mimeType":"image/png"}`, `"data":"` + secret + `"`, ""},
		{`{"type":"resource","resource":{"uri":"x://1","blob":"` + secret + `"}}`, `"blob":"` + secret + `"`, ""},
		{`{"type":"text","text":"token ` + secret + `"}`, "", secret},
	} {
		out := string(sc.Content(json.RawMessage(c.in)))
		if c.keep != "" && !strings.Contains(out, c.keep) {
			t.Errorf("Content(%s) = %s: lost %s", c.in, out, c.keep)
		}
		if c.drop != "" && strings.Contains(out, c.drop) {
			t.Errorf("Content(%s) = %s: kept %s", c.in, out, c.drop)
		}
	}
}
