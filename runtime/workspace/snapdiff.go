package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// diffMaxFileBytes bounds the files snapshot_diff compares line by line;
// larger ones are reported changed without a diff.
const diffMaxFileBytes = 1 << 20

// diffMaxCells bounds the line-by-line table of one file's diff; past it
// the changed middle is shown as one block.
const diffMaxCells = 4 << 20

func snapshotDeleteTool(w *Workspace, _ context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		ID string `json:"id"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("snapshot_delete: %v", err)
	}
	dir, bad := w.snapshot("snapshot_delete", a.ID)
	if bad != nil {
		return bad
	}
	if err := os.RemoveAll(dir); err != nil {
		return toolcall.Errorf("snapshot_delete: removing %q: %s", a.ID, errText(err))
	}
	return toolcall.Text(fmt.Sprintf("Deleted snapshot %q", a.ID))
}

// snapshot is the folder of snapshot id, or the error to return.
func (w *Workspace) snapshot(tool, id string) (string, *toolcall.Result) {
	if !snapIDRE.MatchString(id) {
		return "", toolcall.Errorf("%s: %q is not a snapshot id; list them with snapshot_list", tool, id)
	}
	dir := filepath.Join(w.snapDir(), id)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", toolcall.Errorf("%s: no snapshot %q; list them with snapshot_list", tool, id)
	}
	return dir, nil
}

// snapEntry is one file or link of a tree, as snapshot_diff compares it.
type snapEntry struct {
	mode fs.FileMode
	size int64
	link string
}

func snapshotDiffTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("snapshot_diff: %v", err)
	}
	dir, bad := w.snapshot("snapshot_diff", a.ID)
	if bad != nil {
		return bad
	}
	under := "."
	if a.Path != "" {
		rel, err := w.root.Resolve(a.Path)
		if err != nil {
			return w.pathErr("snapshot_diff", a.Path, err)
		}
		under = rel
	}
	within := func(rel string) bool {
		return under == "." || rel == under || strings.HasPrefix(rel, under+string(filepath.Separator))
	}
	then := map[string]snapEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !within(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		e := snapEntry{mode: info.Mode(), size: info.Size()}
		if d.Type()&fs.ModeSymlink != 0 {
			e.link, _ = os.Readlink(p)
		}
		then[rel] = e
		return nil
	})
	if err != nil {
		return toolcall.Errorf("snapshot_diff: reading snapshot %q: %s", a.ID, errText(err))
	}
	now := map[string]snapEntry{}
	err = w.root.walk(ctx, ".", true, 0, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			if rel == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !within(rel) || !copied(d) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		e := snapEntry{mode: info.Mode(), size: info.Size()}
		if d.Type()&fs.ModeSymlink != 0 {
			e.link, _ = readlinkBeneath(w.root, rel)
		}
		now[rel] = e
		return nil
	})
	if err != nil {
		return toolcall.Errorf("snapshot_diff: reading the workspace: %s", errText(err))
	}
	var added, removed, changed []string
	var diffs strings.Builder
	for _, rel := range slices.Sorted(maps.Keys(now)) {
		n := now[rel]
		t, ok := then[rel]
		switch {
		case !ok:
			added = append(added, rel)
		case n.link != "" || t.link != "":
			if n.link != t.link {
				changed = append(changed, rel)
				fmt.Fprintf(&diffs, "--- %s\n+++ %s\nsymlink: %q → %q\n", rel, rel, t.link, n.link)
			}
		default:
			old, errOld := readCapped(filepath.Join(dir, rel))
			cur, errCur := w.readRel(rel)
			if errOld != nil || errCur != nil {
				if t.size != n.size {
					changed = append(changed, rel)
					fmt.Fprintf(&diffs, "--- %s\n+++ %s\n(%d → %d bytes; too large to compare line by line)\n", rel, rel, t.size, n.size)
				}
				continue
			}
			modeChanged := t.mode.Perm() != n.mode.Perm()
			if bytes.Equal(old, cur) && !modeChanged {
				continue
			}
			changed = append(changed, rel)
			switch {
			case bytes.Equal(old, cur):
				fmt.Fprintf(&diffs, "--- %s\n+++ %s\nmode: %v → %v\n", rel, rel, t.mode.Perm(), n.mode.Perm())
			case bytes.IndexByte(old, 0) >= 0 || bytes.IndexByte(cur, 0) >= 0:
				fmt.Fprintf(&diffs, "--- %s\n+++ %s\n(binary, %d → %d bytes)\n", rel, rel, len(old), len(cur))
			default:
				diffs.WriteString(unifiedDiff(rel, string(old), string(cur)))
			}
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(then)) {
		if _, ok := now[rel]; !ok {
			removed = append(removed, rel)
		}
	}
	if len(added)+len(removed)+len(changed) == 0 {
		return toolcall.Text(fmt.Sprintf("No changes since snapshot %q (.git not compared)", a.ID))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Since snapshot %q: %d added, %d removed, %d changed (.git not compared)\n", a.ID, len(added), len(removed), len(changed))
	list := func(sign string, names []string) {
		for _, n := range names {
			fmt.Fprintf(&b, "%s %s\n", sign, n)
		}
	}
	list("A", added)
	list("D", removed)
	list("M", changed)
	if diffs.Len() > 0 {
		b.WriteString("\n" + diffs.String())
	}
	return toolcall.Text(w.capText(b.String()))
}

// readCapped reads a file of kiln's state folder up to diffMaxFileBytes.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return capRead(f)
}

// readRel reads a workspace file beneath the root up to diffMaxFileBytes.
func (w *Workspace) readRel(rel string) ([]byte, error) {
	f, err := w.root.open(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return capRead(f)
}

var errTooLarge = errors.New("too large")

func capRead(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, diffMaxFileBytes+1))
	if err == nil && len(data) > diffMaxFileBytes {
		err = errTooLarge
	}
	return data, err
}

// unifiedDiff is a unified diff of two texts, three lines of context.
func unifiedDiff(name, a, b string) string {
	x, y := splitLines(a), splitLines(b)
	// Common head and tail first: most edits touch a small middle.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // line index in x (for ' ' and '-'), in y for '+'
		bi   int
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', x[i], i, i})
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	if len(mx)*len(my) <= diffMaxCells {
		// Longest common subsequence of the middle.
		lcs := make([][]int32, len(mx)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(my)+1)
		}
		for i := len(mx) - 1; i >= 0; i-- {
			for j := len(my) - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(mx) || j < len(my) {
			switch {
			case i < len(mx) && j < len(my) && mx[i] == my[j]:
				ops = append(ops, op{' ', mx[i], pre + i, pre + j})
				i++
				j++
			case i < len(mx) && (j == len(my) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', mx[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, op{'+', my[j], pre + i, pre + j})
				j++
			}
		}
	} else {
		for i, l := range mx {
			ops = append(ops, op{'-', l, pre + i, pre})
		}
		for j, l := range my {
			ops = append(ops, op{'+', l, pre + len(mx), pre + j})
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, op{' ', x[len(x)-suf+k], len(x) - suf + k, len(y) - suf + k})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	const ctxLines = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from ctxLines before this change to ctxLines after the
		// last change closer than 2*ctxLines to the previous one.
		start := max(0, k-ctxLines)
		end := k
		for e := k; e < len(ops); e++ {
			if ops[e].kind != ' ' {
				end = e
			} else if e-end > 2*ctxLines {
				break
			}
		}
		stop := min(len(ops), end+ctxLines+1)
		aStart, bStart, aN, bN := ops[start].ai, ops[start].bi, 0, 0
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aN, bStart+1, bN)
		for _, o := range ops[start:stop] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		k = stop
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
