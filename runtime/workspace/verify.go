package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// feedbackTimeout bounds the post-edit checks: feedback that comes late
// is worse than none (the seed's "short timeout").
const feedbackTimeout = 8 * time.Second

// feedback runs gofmt and go vet on a Go file just written and returns
// their findings for that file, or "" when clean, not Go, or too slow.
// Both run confined, like Bash: go vet compiles the package. When a
// language server for the file's language is running, its errors and
// warnings for the file follow (lspFeedback).
func (w *Workspace) feedback(ctx context.Context, rel string) string {
	// A running language server learns of the change first, and adds its
	// own findings after the Go checks.
	if w.lspChanged(rel) == nil {
		return w.goFeedback(ctx, rel)
	}
	return w.goFeedback(ctx, rel) + w.lspFeedback(ctx, rel)
}

// goFeedback is the Go part of the post-edit check.
func (w *Workspace) goFeedback(ctx context.Context, rel string) string {
	if filepath.Ext(rel) != ".go" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, feedbackTimeout)
	defer cancel()
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	script := fmt.Sprintf(`cd %s || exit 0
command -v gofmt >/dev/null || { echo "(gofmt not installed; no post-edit check)"; exit 0; }
gofmt -l -e %s 2>&1 | sed 's/^/gofmt: /'
if [ -n "$(find . -maxdepth 1 -name '*.go' -print -quit)" ] && go env GOMOD 2>/dev/null | grep -q .; then
  go vet . 2>&1 | grep -F %s | grep -v '^#' | sed 's/^/go vet: /'
fi
exit 0`, shellQuote(dir), shellQuote(base), shellQuote(base))
	out, _, status, err := w.run(ctx, script, feedbackTimeout)
	if err != nil || strings.Contains(status, "killed") {
		if w.warming.Load() {
			return "\n\n(post-edit checks skipped: they did not finish within " + feedbackTimeout.String() +
				" while the Go build cache is still warming after the workspace opened; they will run within the limit once it is warm)"
		}
		return "\n\n(post-edit checks skipped: they did not finish within " + feedbackTimeout.String() + ")"
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return ""
	}
	if strings.HasPrefix(out, "gofmt: "+base) && !strings.Contains(out, "\n") {
		out += " (the file is not gofmt-formatted; run gofmt -w " + base + ")"
	}
	return "\n\nPost-edit checks found problems in " + rel + ":\n" + w.capText(out)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// project is a language toolchain detected from the files at the root.
type project struct {
	lang string
	// tests builds the test command for a path and a test name ("" for
	// all).
	tests          func(path, name string) string
	lint, typechek string
}

// pythonManifests mark a Python project, the first found naming it.
var pythonManifests = []string{"pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini"}

// detect finds what kind of project the root holds, by its manifest file.
func (w *Workspace) detect() (project, bool) {
	exists := func(name string) bool {
		var st unix.Stat_t
		return unix.Fstatat(w.root.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	need := func(tool, what string) string {
		return fmt.Sprintf(`command -v %s >/dev/null 2>&1 || { echo "%s is not installed in this workspace's PATH, so %s cannot run; install it or use Bash"; exit 127; }
`, tool, tool, what)
	}
	switch {
	case exists("go.mod"):
		return project{lang: "Go",
			tests: func(path, name string) string {
				args := ""
				if name != "" {
					args += " -run " + shellQuote(name)
				}
				return need("go", "go test") + "go test" + args + " " + shellQuote(goPackage(path)) + " 2>&1"
			},
			lint: need("go", "go vet") + `status=0
go vet ./... 2>&1 || status=1
unformatted=$(gofmt -l . 2>&1)
if [ -n "$unformatted" ]; then echo "gofmt: these files are not formatted (run gofmt -w on them):"; echo "$unformatted"; status=1; fi
exit $status`,
			typechek: need("go", "go build") + "go build ./... 2>&1"}, true
	case exists("package.json"):
		script := func(name, fallback, extra string) string {
			return need("npm", "npm") + fmt.Sprintf(`if node -e 'process.exit(require("./package.json").scripts?.[%q] ? 0 : 1)' 2>/dev/null; then npm run --silent %s%s 2>&1; else %s; fi`, name, name, extra, fallback)
		}
		return project{lang: "JavaScript/TypeScript",
			tests: func(path, name string) string {
				extra := ""
				if path != "" || name != "" {
					extra = " --"
					if path != "" {
						extra += " " + shellQuote(path)
					}
					if name != "" {
						extra += " -t " + shellQuote(name)
					}
				}
				return script("test", `echo "package.json has no test script; add one"; exit 1`, extra)
			},
			lint:     script("lint", `echo "package.json has no lint script; add one"; exit 1`, ""),
			typechek: script("typecheck", `if [ -f tsconfig.json ]; then if [ -x node_modules/.bin/tsc ]; then node_modules/.bin/tsc --noEmit 2>&1; else echo "tsc is not installed (node_modules/.bin/tsc); add typescript to devDependencies"; exit 127; fi; else echo "no typecheck script and no tsconfig.json"; exit 1; fi`, "")}, true
	}
	for _, m := range pythonManifests {
		if !exists(m) {
			continue
		}
		// The project's virtualenv first, as an activated shell has it;
		// python -m puts the root on sys.path, so the tests import the
		// project's package where a bare pytest could not.
		venv := `py=python3
for v in .venv venv; do if [ -x "$v/bin/python" ]; then py="$PWD/$v/bin/python"; PATH="$PWD/$v/bin:$PATH"; break; fi; done
command -v "$py" >/dev/null 2>&1 || { echo "python3 is not installed in this workspace's PATH and the project has no .venv; install it or use Bash"; exit 127; }
`
		module := func(mod string) string {
			return venv + fmt.Sprintf(`"$py" -c 'import %s' 2>/dev/null || { echo "%s is not installed for $(command -v "$py") (the project's .venv, else the system's python3); install it there (pip install %s) or use Bash"; exit 127; }
`, mod, mod, mod)
		}
		return project{lang: "Python",
			tests: func(path, name string) string {
				args := ""
				if path != "" {
					args += " " + shellQuote(path)
				}
				if name != "" {
					args += " -k " + shellQuote(name)
				}
				return module("pytest") + `"$py" -m pytest -q` + args + " 2>&1"
			},
			lint:     venv + need("ruff", "run_lint") + "ruff check . 2>&1",
			typechek: venv + need("mypy", "run_typecheck") + "mypy . 2>&1"}, true
	}
	return project{}, false
}

// goPackage turns run_tests' path into go test's package pattern: all
// packages by default, a folder relative to the root as ./folder, a file
// as its folder.
func goPackage(path string) string {
	switch {
	case path == "":
		return "./..."
	case strings.HasSuffix(path, ".go"):
		path = filepath.Dir(path)
	}
	if path == "." || strings.HasPrefix(path, "./") || strings.HasPrefix(path, "../") || filepath.IsAbs(path) {
		return path
	}
	return "./" + path
}

// verifyTool builds run_tests, run_lint and run_typecheck.
func verifyTool(name string, pick func(project, string, string) string) func(*Workspace, context.Context, json.RawMessage) *toolcall.Result {
	return func(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
		var a struct {
			Path    string `json:"path"`
			Name    string `json:"name"`
			Timeout int64  `json:"timeout"`
		}
		if err := decode(raw, &a); err != nil {
			return toolcall.Errorf("%s: %v", name, err)
		}
		p, ok := w.detect()
		if !ok {
			return toolcall.Errorf("%s: no go.mod, package.json or Python project file (%s) at the workspace root, so the language is unknown; run the project's own command with Bash", name, strings.Join(pythonManifests, ", "))
		}
		if a.Path != "" {
			if _, err := w.root.Resolve(a.Path); err != nil {
				return w.pathErr(name, a.Path, err)
			}
		}
		timeout := w.cfg.Bash.Timeout
		if a.Timeout > 0 {
			timeout = time.Duration(min(a.Timeout, w.cfg.Bash.MaxTimeout.Milliseconds())) * time.Millisecond
		}
		out, code, status, err := w.run(ctx, pick(p, a.Path, a.Name), timeout)
		if err != nil {
			return toolcall.Errorf("%s could not start: %v", name, err)
		}
		verdict := "passed"
		if code != 0 {
			verdict = "FAILED"
		}
		if out == "" {
			out = "(no output)\n"
		}
		res := toolcall.Text(fmt.Sprintf("%s (%s project): %s, %s\n%s", name, p.lang, verdict, status, w.capText(out)))
		res.IsError = code != 0
		return res
	}
}
