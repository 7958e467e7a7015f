package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/goedit"
)

// The structural edit tools (edit_function_body, insert_after_method,
// change_function_signature) parse Go and change its syntax tree
// (package goedit); this file is their part of the workspace: every path
// through the resolver, every write atomic (all files of a multi-file
// change or none), then the post-edit check and a unified diff.

// languageOf says which language a file is for the structural tools, or
// the refusal to return.
func languageOf(tool, path string) error {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".go":
		return nil
	case ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs":
		return fmt.Errorf("%s is not supported for TypeScript/JavaScript yet (%s): use Edit to change the text, or rename_symbol for renames", tool, quotePath(path))
	case ".py", ".pyi":
		return fmt.Errorf("%s is not supported for Python yet (%s): use Edit to change the text, or rename_symbol for renames", tool, quotePath(path))
	default:
		return fmt.Errorf("%s edits Go source (.go files); %s is not one: use Edit", tool, quotePath(path))
	}
}

// readSource reads rel (resolved) beneath the root, whole.
func (w *Workspace) readSource(rel string) ([]byte, error) {
	f, err := w.root.open(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxBytes+1))
	if err == nil && len(data) > readMaxBytes {
		err = fmt.Errorf("over %d MiB", readMaxBytes>>20)
	}
	return data, err
}

// fileChange is one file of an edit: its path relative to the root (links
// resolved) and its text before and after.
type fileChange struct {
	rel      string
	old, new []byte
}

// writeAll writes every change or none: each new text goes to a
// temporary file beside its target first, and only when all are written
// are they renamed over the targets. A rename failing part way puts the
// files already renamed back to their old text.
func (w *Workspace) writeAll(changes []fileChange) error {
	type staged struct {
		dfd       int
		tmp, base string
	}
	var st []staged
	cleanup := func() {
		for _, s := range st {
			if s.tmp != "" {
				_ = unix.Unlinkat(s.dfd, s.tmp, 0)
			}
			unix.Close(s.dfd)
		}
	}
	for _, c := range changes {
		dir, base := filepath.Dir(c.rel), filepath.Base(c.rel)
		dfd, err := w.root.openBeneath(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			cleanup()
			return fmt.Errorf("%s: %w", c.rel, err)
		}
		mode := uint32(0o644)
		var fst unix.Stat_t
		if unix.Fstatat(dfd, base, &fst, unix.AT_SYMLINK_NOFOLLOW) == nil && fst.Mode&unix.S_IFMT == unix.S_IFREG {
			mode = fst.Mode & 0o7777
		}
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp := ".kiln-" + hex.EncodeToString(rnd[:]) + ".tmp"
		st = append(st, staged{dfd: dfd, base: base})
		fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err != nil {
			cleanup()
			return fmt.Errorf("%s: %w", c.rel, err)
		}
		st[len(st)-1].tmp = tmp
		if err := writeFD(fd, c.new); err != nil {
			cleanup()
			return fmt.Errorf("%s: %w", c.rel, err)
		}
	}
	for i, s := range st {
		if err := unix.Renameat(s.dfd, s.tmp, s.dfd, s.base); err != nil {
			// Put back what was renamed already.
			for j := range i {
				_, _ = w.root.writeFile(changes[j].rel, changes[j].old)
			}
			cleanup()
			return fmt.Errorf("%s: %w (the files changed before it were put back)", changes[i].rel, err)
		}
		st[i].tmp = ""
	}
	cleanup()
	return nil
}

func writeFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			unix.Close(fd)
			return err
		}
		data = data[n:]
	}
	if err := unix.Fsync(fd); err != nil {
		unix.Close(fd)
		return err
	}
	return unix.Close(fd)
}

// applyEdits writes changes, with writeMu held by the caller, which
// unlock releases before the post-edit checks run (they may take
// seconds; other writes need not wait for them). It returns the answer:
// summary, the check of each changed file, and the unified diff.
func (w *Workspace) applyEdits(ctx context.Context, tool, summary string, changes []fileChange, unlock func()) *toolcall.Result {
	changes = slices.DeleteFunc(changes, func(c fileChange) bool { return string(c.old) == string(c.new) })
	if len(changes) == 0 {
		unlock()
		return toolcall.Text(summary + "\n\nNothing changed: the code was already as asked.")
	}
	err := w.writeAll(changes)
	unlock()
	if err != nil {
		return toolcall.Errorf("%s could not write the change, nothing was changed: %s", tool, errText(err))
	}
	// Every running language server learns of every change first: the
	// checks below may stop early.
	// gopls is caught up once it published for the new texts (it
	// answered workspace/symbol from the old ones for a moment); the
	// others publish nothing when their diagnostics stay the same.
	before := map[*langServer]int{}
	for _, c := range changes {
		if s := w.running(langOf(c.rel)); s != nil && s.key == "go" {
			if _, ok := before[s]; !ok {
				before[s] = s.conn.Published()
			}
		}
		w.lspChanged(c.rel)
	}
	for s, n := range before {
		s.waitPublished(ctx, n, true, diagFeedbackWait)
	}
	var b strings.Builder
	b.WriteString(summary)
	// One check a file, each bounded; once one runs out of time the
	// rest would too (the build cache is cold), so they are skipped.
	for i, c := range changes {
		fb := w.feedback(ctx, c.rel)
		b.WriteString(fb)
		if strings.Contains(fb, "post-edit checks skipped") && i < len(changes)-1 {
			fmt.Fprintf(&b, "\n(post-edit checks of the other %d changed files skipped too; run run_lint or run_typecheck)", len(changes)-1-i)
			break
		}
	}
	b.WriteString("\n\n")
	for _, c := range changes {
		b.WriteString(unifiedDiff(c.rel, string(c.old), string(c.new)))
	}
	return toolcall.Text(w.capText(b.String()))
}

// goEditFile is the shared start of the one-file tools: decode, resolve,
// check the language, read, run edit, write.
func (w *Workspace) goEditFile(ctx context.Context, tool, path string, edit func(name string, src []byte) ([]byte, string, error)) *toolcall.Result {
	if err := languageOf(tool, path); err != nil {
		return toolcall.Errorf("%v", err)
	}
	rel, err := w.root.resolveTarget(path)
	if err != nil {
		return w.pathErr(tool, path, err)
	}
	w.writeMu.Lock()
	src, err := w.readSource(rel)
	if err != nil {
		w.writeMu.Unlock()
		return w.pathErr(tool, path, err)
	}
	out, summary, err := edit(rel, src)
	if err != nil {
		w.writeMu.Unlock()
		return toolcall.Errorf("%s: %v", tool, err)
	}
	return w.applyEdits(ctx, tool, summary, []fileChange{{rel: rel, old: src, new: out}}, w.writeMu.Unlock)
}

func editFunctionBodyTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		FilePath string `json:"file_path"`
		Function string `json:"function"`
		NewBody  string `json:"new_body"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("edit_function_body: %v", err)
	}
	return w.goEditFile(ctx, "edit_function_body", a.FilePath, func(name string, src []byte) ([]byte, string, error) {
		out, err := goedit.EditBody(name, src, a.Function, a.NewBody)
		return out, fmt.Sprintf("Replaced the body of %s in %s (comments outside the body kept; gofmt applied)", a.Function, w.display(name)), err
	})
}

func insertAfterMethodTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		FilePath string `json:"file_path"`
		Type     string `json:"type"`
		Method   string `json:"method"`
		Code     string `json:"code"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("insert_after_method: %v", err)
	}
	where := "after the last method of " + a.Type
	if a.Method != "" {
		where = "after " + a.Type + "." + a.Method
	}
	return w.goEditFile(ctx, "insert_after_method", a.FilePath, func(name string, src []byte) ([]byte, string, error) {
		out, err := goedit.InsertAfter(name, src, a.Type, a.Method, a.Code)
		return out, fmt.Sprintf("Inserted the code %s in %s (gofmt applied)", where, w.display(name)), err
	})
}
