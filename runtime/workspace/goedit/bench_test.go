package goedit

import (
	"fmt"
	"testing"
)

// BenchmarkChangeSignature: a parameter added across a generated module
// of 100 files in 10 packages, each file calling the target twice (parse,
// type-check of the module's own source, rewrite, gofmt).
func BenchmarkChangeSignature(b *testing.B) {
	m := Module{Path: "example.com/bench", Files: map[string][]byte{
		"core/core.go": []byte("package core\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"),
	}}
	for p := range 10 {
		for f := range 10 {
			m.Files[fmt.Sprintf("p%d/f%d.go", p, f)] = []byte(fmt.Sprintf("package p%d\n\nimport \"example.com/bench/core\"\n\n// F%d calls Add twice.\nfunc F%d(x int) int {\n\ty := core.Add(x, 1) // one\n\treturn core.Add(y, %d)\n}\n", p, f, f, f))
		}
	}
	c := SigChange{File: "core/core.go", Function: "Add", Params: []Param{{Name: "b"}, {Name: "a"}, {Name: "c", Type: "int", Default: "0"}}}
	for b.Loop() {
		out, rep, err := ChangeSignature(m, c)
		if err != nil || len(rep.Calls) != 200 || len(out) != 101 {
			b.Fatalf("%d calls, %d files, %v", len(rep.Calls), len(out), err)
		}
	}
}
