package emit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteTree writes files as the whole tree under outDir, all at once: it
// builds the new tree in a sibling folder (.<out>.emit-tmp, seeded with
// the current tree so unchanged files keep their mtimes and hand-written
// files survive), then swaps it in. A kill at any moment leaves outDir
// holding the old tree or the new one, never a mix, plus at most the
// clearly named work folders, which the next emit removes first.
func WriteTree(outDir string, files map[string][]byte) error {
	// Swap the folder a link points at, not the link.
	if real, err := filepath.EvalSymlinks(outDir); err == nil {
		outDir = real
	}
	tmp, old := workDirs(outDir)
	if err := recoverSwap(outDir, tmp, old); err != nil {
		return err
	}
	if err := seed(outDir, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("emit: copy %s to %s: %w", outDir, tmp, err)
	}
	if err := Write(tmp, files); err != nil {
		if !errors.Is(err, errCrashed) {
			_ = os.RemoveAll(tmp)
		}
		return err
	}
	if crash("built") {
		return errCrashed
	}
	if _, err := os.Lstat(outDir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(outDir), 0o755); err != nil {
			return fmt.Errorf("emit: %w", err)
		}
		if err := os.Rename(tmp, outDir); err != nil {
			_ = os.RemoveAll(tmp)
			return fmt.Errorf("emit: move %s to %s: %w", tmp, outDir, err)
		}
		return nil
	}
	if err := swap(outDir, tmp, old); err != nil {
		return err
	}
	// tmp (exchanged) or old (renamed) now holds the previous tree.
	_ = os.RemoveAll(tmp)
	_ = os.RemoveAll(old)
	return nil
}

// workDirs names emit's folders beside outDir: tmp, where the new tree is
// built, and old, where the previous tree waits during a two-rename swap.
func workDirs(outDir string) (tmp, old string) {
	clean := filepath.Clean(outDir)
	parent, base := filepath.Dir(clean), filepath.Base(clean)
	return filepath.Join(parent, "."+base+".emit-tmp"), filepath.Join(parent, "."+base+".emit-old")
}

// recoverSwap undoes what a killed emit left: a previous tree moved away
// but not replaced goes back to outDir; work folders are removed.
func recoverSwap(outDir, tmp, old string) error {
	if _, err := os.Lstat(outDir); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(old); err == nil {
			if err := os.Rename(old, outDir); err != nil {
				return fmt.Errorf("emit: restore %s from an interrupted emit's %s: %w", outDir, old, err)
			}
		}
	}
	for _, d := range []string{tmp, old} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("emit: remove an interrupted emit's %s: %w", d, err)
		}
	}
	return nil
}

// swapTwoRenames moves outDir away and tmp in: the portable swap, with a
// moment between the renames that recoverSwap repairs after a kill.
func swapTwoRenames(outDir, tmp, old string) error {
	if err := os.Rename(outDir, old); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("emit: move %s aside: %w", outDir, err)
	}
	if crash("moved aside") {
		return errCrashed
	}
	if err := os.Rename(tmp, outDir); err != nil {
		_ = os.Rename(old, outDir)
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("emit: move %s to %s: %w", tmp, outDir, err)
	}
	return nil
}

// seed fills dst with the tree at src: hard links where the file system
// allows (cheap, and mtimes stay), copies otherwise. Files are replaced in
// dst by rename, never written in place, so src is never changed through a
// link. A missing src seeds nothing.
func seed(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			if os.Link(p, to) == nil {
				return nil
			}
			return copyFile(p, to, info)
		}
		return fmt.Errorf("%s is neither a file, a folder nor a link; move it out of the generated folder", p)
	})
}

func copyFile(from, to string, info fs.FileInfo) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, info.ModTime(), info.ModTime())
}

// errCrashed stops a test emit where a kill would, leaving its files as
// they are.
var errCrashed = errors.New("emit: stopped by a test at a simulated kill")

// crashAt, set only by tests, names the stage ("wrote <path>", "built",
// "moved aside") at which emit stops as if killed.
var crashAt func(stage string) bool

func crash(stage string) bool { return crashAt != nil && crashAt(stage) }
