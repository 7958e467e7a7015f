package workspace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

func benchFixture(b *testing.B) *Workspace {
	b.Helper()
	root := b.TempDir()
	cfg := config.Workspace{Root: root, MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: b.TempDir(),
		Bash: config.Bash{Timeout: time.Minute, MaxTimeout: time.Minute}}
	w, err := Open(&config.Backend{Name: "bench", Workspace: &cfg}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	if res := w.Call(b.Context(), "Write", json.RawMessage(`{"file_path":"a.txt","content":"`+strings.Repeat("line\\n", 200)+`"}`)); res.IsError {
		b.Fatal(res.TextContent())
	}
	return w
}

func benchCall(b *testing.B, tool, args string) {
	w := benchFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if res := w.Call(b.Context(), tool, json.RawMessage(args)); res.IsError && tool != "Bash" {
			b.Fatal(res.TextContent())
		}
	}
}

// BenchmarkRead is one Read of a 200-line file through the resolver and
// openat2.
func BenchmarkRead(b *testing.B) { benchCall(b, "Read", `{"file_path":"a.txt"}`) }

// BenchmarkBashTrue is the cost of one confined command: re-exec,
// namespaces, Landlock, bash.
func BenchmarkBashTrue(b *testing.B) { benchCall(b, "Bash", `{"command":"true"}`) }

// BenchmarkBashTimeout runs a command past a 200 ms timeout: ns/op minus
// 200 ms is how late the shell-shaped 124 result comes.
func BenchmarkBashTimeout(b *testing.B) {
	benchCall(b, "Bash", `{"command":"sleep 30 & sleep 30","timeout":200}`)
}

// lspBenchProject generates a 100-file project in lang, each file's
// declaration used by the next, and the position of a use in the last
// file whose definition is in another file.
func lspBenchProject(lang string) (files map[string]string, file string, line, col int) {
	files = map[string]string{}
	const n = 100
	switch lang {
	case "go":
		files["go.mod"] = "module example.com/bench\n\ngo 1.22\n"
		for i := range n {
			pkg := fmt.Sprintf("p%d", i/10)
			body := fmt.Sprintf("package %s\n\n// T%d is one of many.\ntype T%d struct{ N int }\n\n// F%d adds.\nfunc F%d(x int) int {\n", pkg, i, i, i, i)
			imp := ""
			switch {
			case i == 0:
				body += "\treturn x + 1\n}\n"
			case (i-1)/10 == i/10:
				body += fmt.Sprintf("\treturn F%d(x) + T%d{N: x}.N\n}\n", i-1, i)
			default:
				imp = fmt.Sprintf("import \"example.com/bench/p%d\"\n\n", (i-1)/10)
				body += fmt.Sprintf("\treturn p%d.F%d(x) + T%d{N: x}.N\n}\n", (i-1)/10, i-1, i)
			}
			if imp != "" {
				body = strings.Replace(body, "\n\n", "\n\n"+imp, 1)
			}
			files[fmt.Sprintf("%s/f%d.go", pkg, i)] = body
		}
		// p9/f99.go: "\treturn F98(x) + …" on line 8, F98 from column 9.
		return files, "p9/f99.go", 8, 9
	case "typescript":
		files["package.json"] = `{"name": "bench", "private": true}` + "\n"
		files["tsconfig.json"] = `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020", "noEmit": true}, "include": ["src"]}` + "\n"
		for i := range n {
			if i == 0 {
				files["src/m0.ts"] = "/** f0 adds one. */\nexport function f0(x: number): number {\n  return x + 1;\n}\n"
				continue
			}
			files[fmt.Sprintf("src/m%d.ts", i)] = fmt.Sprintf("import { f%d } from \"./m%d\";\n\n/** f%d adds. */\nexport function f%d(x: number): number {\n  return f%d(x) + 1;\n}\n", i-1, i-1, i, i, i-1)
		}
		// src/m99.ts line 5 "  return f98(x) + 1;": f98 from column 10.
		return files, "src/m99.ts", 5, 10
	case "python":
		files["pyproject.toml"] = "[project]\nname = \"bench\"\nversion = \"0.1.0\"\n"
		files["bench/__init__.py"] = ""
		for i := range n {
			if i == 0 {
				files["bench/m0.py"] = "def f0(x: int) -> int:\n    \"\"\"Adds one.\"\"\"\n    return x + 1\n"
				continue
			}
			files[fmt.Sprintf("bench/m%d.py", i)] = fmt.Sprintf("from bench.m%d import f%d\n\n\ndef f%d(x: int) -> int:\n    return f%d(x) + 1\n", i-1, i-1, i, i-1)
		}
		// bench/m99.py line 5 "    return f98(x) + 1": f98 from column 12.
		return files, "bench/m99.py", 5, 12
	}
	panic("unknown language " + lang)
}

// BenchmarkLSPFindDefinition is find_definition on a generated 100-file
// project per language: cold-ms is the first call on a fresh workspace
// (server start, project load, answer), warm-p50-ms the median of the
// calls after it. The Go workspace also warms its build cache in the
// background from Open, as kiln does.
func BenchmarkLSPFindDefinition(b *testing.B) {
	for _, lang := range []string{"go", "typescript", "python"} {
		b.Run(lang, func(b *testing.B) {
			lspPath(b, lang)
			files, file, line, col := lspBenchProject(lang)
			args := fmt.Sprintf(`{"file_path":%q,"line":%d,"column":%d}`, file, line, col)
			var cold, warm []time.Duration
			for b.Loop() {
				root := b.TempDir()
				writeTree(b, root, files)
				cfg := config.Workspace{Root: root, MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: b.TempDir(),
					Bash: config.Bash{Timeout: time.Minute, MaxTimeout: time.Minute}}
				w, err := Open(&config.Backend{Name: "bench", Workspace: &cfg}, nil)
				if err != nil {
					b.Fatal(err)
				}
				call := func() time.Duration {
					start := time.Now()
					res := w.Call(b.Context(), "find_definition", json.RawMessage(args))
					d := time.Since(start)
					if res.IsError || !strings.Contains(res.TextContent(), "98") {
						b.Fatalf("find_definition: %s", res.TextContent())
					}
					return d
				}
				cold = append(cold, call())
				for range 30 {
					warm = append(warm, call())
				}
				w.Close()
			}
			slices.Sort(warm)
			var sum time.Duration
			for _, d := range cold {
				sum += d
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(len(cold))/1000, "cold-ms")
			b.ReportMetric(float64(warm[len(warm)/2].Microseconds())/1000, "warm-p50-ms")
		})
	}
}
