package goedit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sigModule is a module of three packages that call geo.Dist and
// Point.Scale: from another package (with comments in the arguments),
// from in-package tests and from an external test package.
func sigModule() Module {
	return Module{Path: "example.com/m", Files: map[string][]byte{
		"geo/geo.go": []byte(`package geo

// Dist is the distance from a to b.
func Dist(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// Point is a point.
type Point struct{ X float64 }

// Scale multiplies p by k.
func (p *Point) Scale(k float64) { p.X *= k }

func twice(x float64) float64 { return Dist(0, x) * 2 }
`),
		"geo/geo_test.go": []byte("package geo\n\nimport \"testing\"\n\nfunc TestDist(t *testing.T) {\n\tif Dist(1, 3) != 2 {\n\t\tt.Fatal(\"Dist\")\n\t}\n}\n"),
		"geo/ext_test.go": []byte("package geo_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/geo\"\n)\n\nfunc TestExt(t *testing.T) {\n\tp := &geo.Point{X: 1}\n\tp.Scale(2)\n\t_ = geo.Dist(2, 5)\n}\n"),
		"app/app.go": []byte(`package app

import (
	"fmt"

	"example.com/m/geo"
)

// Run prints a distance.
func Run() {
	d := geo.Dist(
		1, // from
		4, // to
	)
	var p geo.Point
	p.Scale(3)
	fmt.Println(d, p)
}
`),
	}}
}

// buildModule writes m (with out's files replacing its own) and runs go
// build and go vet (which compiles the tests too) on it.
func buildModule(t *testing.T, m Module, out map[string][]byte) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH")
	}
	dir := t.TempDir()
	for name, data := range m.Files {
		if d, ok := out[name]; ok {
			data = d
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+m.Path+"\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet ./... after the change: %v\n%s", err, b)
	}
}

func TestChangeSignature(t *testing.T) {
	m := sigModule()
	// Add unit (with a default), reorder b before a, retype nothing yet.
	out, rep, err := ChangeSignature(m, SigChange{File: "geo/geo.go", Function: "Dist",
		Params: []Param{{Name: "b"}, {Name: "a"}, {Name: "scale", Type: "float64", Default: "1.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Calls) != 4 || len(out) != 4 {
		t.Errorf("calls %v, files %d; want 4 calls in 4 files", rep.Calls, len(out))
	}
	geo := string(out["geo/geo.go"])
	if !strings.Contains(geo, "// Dist is the distance from a to b.\nfunc Dist(b float64, a float64, scale float64) float64 {") || !strings.Contains(geo, "Dist(x, 0, 1.0)") {
		t.Errorf("geo.go:\n%s", geo)
	}
	app := string(out["app/app.go"])
	if !strings.Contains(app, "4, // to") || !strings.Contains(app, "1, // from") || !strings.Contains(app, "1.0") {
		t.Errorf("app.go lost an argument's comment:\n%s", app)
	}
	if !strings.Contains(string(out["geo/ext_test.go"]), "geo.Dist(5, 2, 1.0)") || !strings.Contains(string(out["geo/geo_test.go"]), "Dist(3, 1, 1.0)") {
		t.Errorf("test files:\n%s\n%s", out["geo/ext_test.go"], out["geo/geo_test.go"])
	}
	buildModule(t, m, out)

	// Remove b, retype a; the dropped arguments are reported.
	res := "float32"
	out, rep, err = ChangeSignature(m, SigChange{File: "geo/geo.go", Function: "Dist",
		Params: []Param{{Name: "a", Type: "float32"}}, Results: &res})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) != 4 || !strings.Contains(strings.Join(rep.Dropped, "\n"), "app/app.go:11: 4") {
		t.Errorf("dropped = %v", rep.Dropped)
	}
	if g := string(out["geo/geo.go"]); !strings.Contains(g, "func Dist(a float32) float32 {") {
		t.Errorf("geo.go:\n%s", g)
	}
	if !strings.Contains(string(out["geo/geo_test.go"]), "Dist(1)") {
		t.Errorf("geo_test.go:\n%s", out["geo/geo_test.go"])
	}

	// A method: every call through a value of the type.
	out, rep, err = ChangeSignature(m, SigChange{File: "geo/geo.go", Function: "Point.Scale",
		Params: []Param{{Name: "k"}, {Name: "offset", Type: "float64", Default: "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Calls) != 2 || !strings.Contains(string(out["app/app.go"]), "p.Scale(3, 0)") {
		t.Errorf("calls %v:\n%s", rep.Calls, out["app/app.go"])
	}
	buildModule(t, m, out)
}

// TestChangeSignatureGeneric: calls that instantiate a generic function,
// implicitly or explicitly, are rewritten.
func TestChangeSignatureGeneric(t *testing.T) {
	m := Module{Path: "example.com/g", Files: map[string][]byte{
		"g.go": []byte("package g\n\n// First returns xs[0] or def.\nfunc First[T any](xs []T, def T) T {\n\tif len(xs) == 0 {\n\t\treturn def\n\t}\n\treturn xs[0]\n}\n\nvar a = First([]int{1}, 0)\nvar b = First[string](nil, \"x\")\n"),
	}}
	out, rep, err := ChangeSignature(m, SigChange{File: "g.go", Function: "First", Params: []Param{{Name: "def"}, {Name: "xs"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := string(out["g.go"])
	if len(rep.Calls) != 2 || !strings.Contains(g, "First(0, []int{1})") || !strings.Contains(g, "First[string](\"x\", nil)") || !strings.Contains(g, "func First[T any](def T, xs []T) T {") {
		t.Errorf("calls %v:\n%s", rep.Calls, g)
	}
	buildModule(t, m, out)
}

// TestChangeSignatureInExternalTest: a helper declared in an external
// test package (package x_test) has its calls there rewritten.
func TestChangeSignatureInExternalTest(t *testing.T) {
	m := sigModule()
	m.Files["geo/helper_test.go"] = []byte("package geo_test\n\nfunc helper(a, b int) int { return a - b }\n\nvar _ = helper(1, 2)\n")
	out, rep, err := ChangeSignature(m, SigChange{File: "geo/helper_test.go", Function: "helper", Params: []Param{{Name: "b"}, {Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Calls) != 1 || !strings.Contains(string(out["geo/helper_test.go"]), "helper(2, 1)") {
		t.Errorf("calls %v:\n%s", rep.Calls, out["geo/helper_test.go"])
	}
}

// TestChangeSignatureOtherPackageInFolder: a program of its own beside
// a package (//go:build ignore, package main) has its calls rewritten.
func TestChangeSignatureOtherPackageInFolder(t *testing.T) {
	m := sigModule()
	m.Files["geo/gen.go"] = []byte("//go:build ignore\n\npackage main\n\nimport \"example.com/m/geo\"\n\nfunc main() { println(geo.Dist(1, 2)) }\n")
	out, _, err := ChangeSignature(m, SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "b"}, {Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out["geo/gen.go"]), "geo.Dist(2, 1)") {
		t.Errorf("gen.go:\n%s", out["geo/gen.go"])
	}
}

func TestChangeSignatureRefusals(t *testing.T) {
	withFile := func(name, src string) Module {
		m := sigModule()
		m.Files[name] = []byte(src)
		return m
	}
	cases := []struct {
		name string
		m    Module
		c    SigChange
		want string
	}{
		{"interface", withFile("geo/iface.go", "package geo\n\n// Scaler scales.\ntype Scaler interface{ Scale(k float64) }\n"),
			SigChange{File: "geo/geo.go", Function: "Point.Scale", Params: []Param{{Name: "k"}}},
			"interface Scaler has a method Scale that Point implements"},
		{"value use", withFile("app/v.go", "package app\n\nimport \"example.com/m/geo\"\n\nvar f = geo.Dist\n"),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}, {Name: "b"}}},
			"app/v.go:5: uses Dist as a value"},
		{"ambiguous", withFile("app/w.go", "package app\n\nimport \"os\"\n\nfunc W() { os.Stdout.Scale(1) }\n"),
			SigChange{File: "geo/geo.go", Function: "Point.Scale", Params: []Param{{Name: "k"}}},
			"app/w.go:5: cannot tell whether os.Stdout.Scale is Point.Scale"},
		{"new param without default", sigModule(),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}, {Name: "c", Type: "int"}}},
			"parameter c is new (Dist has a, b), so it needs type and default_value"},
		{"bad default", sigModule(),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}, {Name: "c", Type: "int", Default: "1 +"}}},
			"is not a Go expression"},
		{"type that escapes", sigModule(),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a", Type: "float64) (x float64"}}},
			"is not a Go type"},
		{"results that escape", sigModule(),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}}, Results: ptr("int { return 0 }\nfunc Evil() int")},
			"is not a Go result list"},
		{"broken file", withFile("app/bad.go", "package app\nfunc ("),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}}},
			"do not parse, so calls in them could be missed"},
		{"method expression", withFile("app/me.go", "package app\n\nimport \"example.com/m/geo\"\n\nfunc M(p *geo.Point) { (*geo.Point).Scale(p, 2) }\n"),
			SigChange{File: "geo/geo.go", Function: "Point.Scale", Params: []Param{{Name: "k"}}},
			"as a method expression"},
		{"build-tagged variants", withFile("geo/dist_other.go", "//go:build windows\n\npackage geo\n\nfunc Dist(a, b float64) float64 { return 0 }\n"),
			SigChange{File: "geo/geo.go", Function: "Dist", Params: []Param{{Name: "a"}}},
			"is declared in geo/dist_other.go too"},
		{"variadic", withFile("geo/v.go", "package geo\n\nfunc Sum(xs ...int) int { return 0 }\n"),
			SigChange{File: "geo/v.go", Function: "Sum", Params: []Param{{Name: "xs"}}},
			"is variadic"},
	}
	for _, c := range cases {
		_, _, err := ChangeSignature(c.m, c.c)
		if err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant a refusal containing %q", c.name, err, c.want)
		}
	}
}

func ptr(s string) *string { return &s }
