package goedit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func shapes(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "shapes.go.in"))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestEditBodyGolden: the doc comment (two paragraphs), the comment after
// the closing brace, the block comment between declarations and the
// struct field's inline comment all stay byte for byte.
func TestEditBodyGolden(t *testing.T) {
	out, err := EditBody("shapes.go", shapes(t), "Circle.Area", "// pi r squared\nreturn math.Pi*c.R*c.R // now right")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "edit_body.golden", out)
	// A whole { … } block is taken as the body too.
	out2, err := EditBody("shapes.go", shapes(t), "Circle.Area", "{\n// pi r squared\nreturn math.Pi*c.R*c.R // now right\n}")
	if err != nil || string(out2) != string(out) {
		t.Errorf("braced body = %s, %v", out2, err)
	}
}

func TestInsertAfterGolden(t *testing.T) {
	out, err := InsertAfter("shapes.go", shapes(t), "Circle", "Area", "// Diameter is twice the radius.\nfunc (c Circle) Diameter() float64 { return 2*c.R } // inline")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "insert_after.golden", out)
	// Without method: after the type's last method.
	out, err = InsertAfter("shapes.go", shapes(t), "Circle", "", "// Zero reports a zero radius.\nfunc (c Circle) Zero() bool {\nreturn c.R == 0\n}")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "insert_last.golden", out)
}

func TestRefusals(t *testing.T) {
	src := shapes(t)
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"body parse error", func() error {
			_, err := EditBody("shapes.go", src, "Scale", "return v *")
			return err
		}, "new_body does not parse as Go statements (new_body line 2"},
		{"body that escapes", func() error {
			_, err := EditBody("shapes.go", src, "Scale", "return v\n}\n\nfunc Extra() {")
			return err
		}, "closes the function's body and goes on past it"},
		{"unknown function", func() error {
			_, err := EditBody("shapes.go", src, "Area", "return 1")
			return err
		}, "declares no function Area; it declares Circle.Area, Circle.Perimeter, Scale"},
		{"broken file", func() error {
			_, err := EditBody("bad.go", []byte("package x\nfunc ("), "F", "return")
			return err
		}, "bad.go does not parse as Go"},
		{"code parse error", func() error {
			_, err := InsertAfter("shapes.go", src, "Circle", "Area", "func (c Circle) X( {")
			return err
		}, "code does not parse as Go declarations"},
		{"no such method", func() error {
			_, err := InsertAfter("shapes.go", src, "Circle", "Volume", "func F() {}")
			return err
		}, "no method Circle.Volume; its methods of Circle are Area, Perimeter"},
		{"duplicate", func() error {
			_, err := InsertAfter("shapes.go", src, "Circle", "Area", "func (c Circle) Perimeter() float64 { return 0 }")
			return err
		}, "declares Circle.Perimeter twice"},
		{"import", func() error {
			_, err := InsertAfter("shapes.go", src, "Circle", "", `import "fmt"`)
			return err
		}, "holds an import"},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal containing %q", c.name, err, c.want)
		}
	}
}
