package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/goedit"
)

// Bounds on the module change_function_signature loads: every .go file of
// it is parsed and type-checked in kiln's memory.
const (
	sigMaxFiles = 5000
	sigMaxBytes = 64 << 20
)

type sigParam struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	DefaultValue string `json:"default_value"`
}

func changeSignatureTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "change_function_signature"
	var a struct {
		FilePath string          `json:"file_path"`
		Function string          `json:"function"`
		Params   json.RawMessage `json:"params"`
		Results  *string         `json:"results"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	var params []sigParam
	dec := json.NewDecoder(bytes.NewReader(a.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&params); err != nil {
		return toolcall.Errorf(`%s: params must be a list of {"name", "type", "default_value"} objects, the new parameters in order (%v)`, tool, err)
	}
	if err := languageOf(tool, a.FilePath); err != nil {
		return toolcall.Errorf("%v", err)
	}
	rel, err := w.root.resolveTarget(a.FilePath)
	if err != nil {
		return w.pathErr(tool, a.FilePath, err)
	}
	modDir, err := w.moduleOf(rel)
	if err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	// Held from reading the module to writing it: a Write or Edit in
	// between would be overwritten.
	w.writeMu.Lock()
	unlock := sync.OnceFunc(w.writeMu.Unlock) // released early before the post-edit check
	defer unlock()
	m, err := w.loadModule(modDir)
	if err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	inMod := func(r string) string { // module-relative, slash-separated
		if modDir == "." {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(strings.TrimPrefix(r, modDir+"/"))
	}
	var ps []goedit.Param
	for _, p := range params {
		ps = append(ps, goedit.Param{Name: p.Name, Type: p.Type, Default: p.DefaultValue})
	}
	out, rep, err := goedit.ChangeSignature(m, goedit.SigChange{File: inMod(rel), Function: a.Function, Params: ps, Results: a.Results})
	if err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	var changes []fileChange
	for name, text := range out {
		r := filepath.Join(modDir, filepath.FromSlash(name))
		changes = append(changes, fileChange{rel: r, old: m.Files[name], new: text})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Changed the signature of %s in %s and %d call site(s) in %d file(s)", a.Function, w.display(rel), len(rep.Calls), len(out))
	if len(rep.Calls) > 0 {
		b.WriteString(": " + strings.Join(rep.Calls, ", "))
	}
	if len(rep.Dropped) > 0 {
		b.WriteString("\nArguments dropped with their parameters (any side effect they had is gone; check them): " + strings.Join(rep.Dropped, "; "))
	}
	if a.Results != nil {
		b.WriteString("\nThe results changed; call sites were not rewritten for that: run_typecheck shows the ones to fix.")
	}
	return w.applyEdits(ctx, tool, b.String(), changes, unlock)
}

// moduleOf finds the folder (relative to the root) of the go.mod that
// holds rel, searching up to the root and no further.
func (w *Workspace) moduleOf(rel string) (string, error) {
	for dir := filepath.Dir(rel); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if unix.Fstatat(w.root.fd, filepath.Join(dir, "go.mod"), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			return dir, nil
		}
		if dir == "." || dir == "/" {
			return "", fmt.Errorf("no go.mod holds %s inside the workspace root, so its call sites cannot be found; change_function_signature works on a Go module in the workspace", quotePath(rel))
		}
	}
}

// loadModule reads the module path and every .go file of the module at
// dir, skipping what the go command skips (vendor, testdata, folders
// starting with . or _, nested modules) and symlinks.
func (w *Workspace) loadModule(dir string) (goedit.Module, error) {
	gomod, err := w.readSource(filepath.Join(dir, "go.mod"))
	if err != nil {
		return goedit.Module{}, fmt.Errorf("cannot read %s: %s", filepath.Join(dir, "go.mod"), errText(err))
	}
	m := goedit.Module{Files: map[string][]byte{}}
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			m.Path = strings.TrimSpace(rest)
			if i := strings.Index(m.Path, "//"); i >= 0 {
				m.Path = strings.TrimSpace(m.Path[:i])
			}
			if u, err := strconv.Unquote(m.Path); err == nil {
				m.Path = u
			}
			break
		}
	}
	if m.Path == "" {
		return m, fmt.Errorf("%s has no module line", filepath.Join(dir, "go.mod"))
	}
	base := filepath.Join(w.root.dir, dir)
	total := 0
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped, as go build would fail on it
		}
		name := d.Name()
		if d.IsDir() {
			if p != base && (name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != base {
				if fi, err := os.Lstat(filepath.Join(p, "go.mod")); err == nil && fi.Mode().IsRegular() {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		if len(m.Files) >= sigMaxFiles {
			return fmt.Errorf("the module has more than %d .go files, more than change_function_signature loads; change the call sites with rename_symbol/Edit", sigMaxFiles)
		}
		r, _ := filepath.Rel(w.root.dir, p)
		data, err := w.readSource(r)
		if err != nil {
			return fmt.Errorf("cannot read %s: %s", r, errText(err))
		}
		total += len(data)
		if total > sigMaxBytes {
			return fmt.Errorf("the module's Go source is over %d MiB, more than change_function_signature loads", sigMaxBytes>>20)
		}
		mr, _ := filepath.Rel(base, p)
		m.Files[filepath.ToSlash(mr)] = data
		return nil
	})
	return m, err
}
