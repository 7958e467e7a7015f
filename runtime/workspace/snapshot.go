package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Snapshots are exact copies of the tree (files with their modes, folders,
// symlinks as links) under state_dir/workspace/<name>/snapshots/<id>.
// .git is copied like anything else: restoring must give back the tree
// as it was.

var snapIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func (w *Workspace) snapDir() string { return filepath.Join(w.cfg.StateDir, "snapshots") }

func snapshotCreateTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		Name string `json:"name"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("snapshot_create: %v", err)
	}
	id := time.Now().UTC().Format("20060102-150405.000")
	id = strings.ReplaceAll(id, ".", "-")
	if a.Name != "" {
		if !snapIDRE.MatchString(a.Name) {
			return toolcall.Errorf("snapshot_create: name %q must be lowercase letters, digits, - or _ (at most 64)", a.Name)
		}
		id = a.Name
	}
	dst := filepath.Join(w.snapDir(), id)
	if _, err := os.Lstat(dst); err == nil {
		return toolcall.Errorf("snapshot_create: a snapshot %q exists already; pick another name", id)
	}
	lim := w.snapLimits()
	if err := w.measure(ctx, lim); err != nil {
		return w.snapErr(err)
	}
	if err := os.MkdirAll(w.snapDir(), 0o700); err != nil {
		return toolcall.Errorf("snapshot_create: %s", errText(err))
	}
	// Each create copies into a folder of its own, so two creates of one
	// name never write into or remove each other's copy.
	tmp, err := os.MkdirTemp(w.snapDir(), id+".*"+partialSuffix)
	if err != nil {
		return toolcall.Errorf("snapshot_create: %s", errText(err))
	}
	lock, err := lockPartial(tmp)
	switch {
	case err == nil:
		defer lock.Close()
	case errors.Is(err, errNoLocks):
		// The copy goes on unlocked; Open then never takes its folder
		// for a dead create's.
	default:
		_ = os.RemoveAll(tmp)
		return toolcall.Errorf("snapshot_create: %s", errText(err))
	}
	files, size, err := w.copyOut(ctx, tmp, lim)
	if err == nil {
		if err = renameNoReplace(tmp, dst, filepath.Join(w.cfg.StateDir, "snapshots.lock")); errors.Is(err, fs.ErrExist) {
			_ = os.RemoveAll(tmp)
			return toolcall.Errorf("snapshot_create: a snapshot %q exists already (made while this one was copying); pick another name", id)
		}
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return w.snapErr(err)
	}
	return toolcall.Text(fmt.Sprintf("Snapshot %q created: %d files, %d bytes. Restore it with snapshot_restore {\"id\": %q}.", id, files, size, id))
}

// partialSuffix ends the name of a snapshot still being copied; no
// snapshot id holds a dot, so the listing tells the two apart.
const partialSuffix = ".partial"

// partialGrace is how old a partial folder whose lock is free must be
// before Open removes it: a create locks its folder just after making it,
// and a folder younger than this may be in that moment.
const partialGrace = time.Minute

// lockPartial takes the lock a create holds on its partial folder until
// the folder is renamed or removed. A create that dies (kill -9) drops
// it, so a partial folder whose lock is free is a dead create's, whether
// it was this kiln's or another's sharing the state folder; flock locks
// of two descriptors conflict within one process too. On a file system
// that takes no such lock it fails with errNoLocks.
func lockPartial(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if locksUnsupported(err) {
			err = errNoLocks
		}
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return f, nil
}

// errNoLocks is a flock the file system refused as such, not because
// another holds the lock.
var errNoLocks = errors.New("the file system takes no flock locks")

// locksUnsupported reports whether err, from flock, says the file system
// cannot lock the file: NFS emulates flock with POSIX locks, which refuse
// an exclusive lock on a descriptor not open for writing (a folder never
// is) with EBADF, and a mount without a lock manager answers ENOLCK; some
// FUSE file systems answer EOPNOTSUPP or EINVAL. They are also the file
// systems without RENAME_NOREPLACE (older NFS, FUSE): failing on such a
// refusal failed every snapshot_create there.
func locksUnsupported(err error) bool {
	return errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.EINVAL)
}

// flock is unix.Flock, replaced in tests by a file system without locks.
var flock = unix.Flock

// renameat2 is unix.Renameat2, replaced in tests by a file system
// without RENAME_NOREPLACE.
var renameat2 = unix.Renameat2

// renameNoReplace moves the finished copy tmp to dst unless dst exists.
// A plain rename onto an empty folder replaces it, so of two creates of
// an empty tree both would report success.
func renameNoReplace(tmp, dst, lock string) error {
	err := renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// The file system has no RENAME_NOREPLACE (older NFS, some FUSE
		// file systems).
		err = renameLocked(tmp, dst, lock)
	}
	if errors.Is(err, unix.ENOTEMPTY) {
		err = unix.EEXIST
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: dst, Err: err}
	}
	return nil
}

// renameLocked renames tmp to dst if dst is free, checking and renaming
// under an exclusive flock of the file lock, which every create of the
// state folder takes for this, in this kiln or another. The lock file is
// never removed: a create locking a removed file and one locking its
// replacement would not exclude each other.
//
// On a file system that takes no locks the check and the rename run
// unlocked: two creates of one name of an empty tree finishing in the same
// instant may then both succeed, the one case left, rather than every
// create failing there.
func renameLocked(tmp, dst, lock string) error {
	// Open for writing: NFS grants an exclusive flock (a POSIX lock
	// there) only on a descriptor open for writing.
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err = flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil && !locksUnsupported(err) {
		return &os.PathError{Op: "flock", Path: lock, Err: err}
	}
	switch _, err := os.Lstat(dst); {
	case err == nil:
		return unix.EEXIST
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return unix.Rename(tmp, dst)
}

// snapLimits bound what one snapshot copies into the state folder: bytes
// of file content and entries (files, folders and symlinks).
type snapLimits struct {
	bytes   int64
	entries int
}

func (w *Workspace) snapLimits() snapLimits {
	l := snapLimits{bytes: w.cfg.SnapshotMaxSize, entries: w.cfg.SnapshotMaxFiles}
	if l.bytes <= 0 {
		l.bytes = config.DefaultSnapshotMaxSize
	}
	if l.entries <= 0 {
		l.entries = config.DefaultSnapshotMaxFiles
	}
	return l
}

// limitError reports a tree past a snapshot limit.
type limitError struct {
	// key is the backend key that sets the limit.
	key          string
	found, limit int64
	// grew says the tree passed the limit while it was copied, after
	// measuring found it within; found is then unknown.
	grew bool
	// git is the part of found that .git folders hold.
	git int64
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%s: %d over the limit of %d", e.key, e.found, e.limit)
}

// snapErr is snapshot_create's answer to a failed measure or copy; the
// caller has removed what was copied.
func (w *Workspace) snapErr(err error) *toolcall.Result {
	var le *limitError
	if !errors.As(err, &le) {
		return toolcall.Errorf("snapshot_create failed, nothing was kept: %s", errText(err))
	}
	found, limit := strconv.FormatInt(le.found, 10)+" files, folders and links", strconv.FormatInt(le.limit, 10)
	if le.key == "snapshot_max_size" {
		found, limit = showBytes(le.found)+" of file content", showBytes(le.limit)
	}
	// A model told to delete what need not be kept must not take .git
	// for that: the limit counts it since snapshots copy it.
	if le.git > 0 {
		part := strconv.FormatInt(le.git, 10)
		if le.key == "snapshot_max_size" {
			part = showBytes(le.git)
		}
		found += " (" + part + " of it in .git, the repository's history: keep it)"
	}
	state := "holds " + found + ", over"
	if le.grew {
		state = "grew past"
	}
	return toolcall.Errorf("snapshot_create refused: the workspace %s the snapshot limit of %s; nothing was kept. "+
		"Raise backends.%s.%s in kiln's config, or delete what need not be kept (build output, downloaded dependencies) and try again",
		state, limit, w.name, le.key)
}

// showBytes writes n in bytes, with a binary unit beside it from 1 MiB up.
func showBytes(n int64) string {
	s := strconv.FormatInt(n, 10) + " bytes"
	switch {
	case n >= 1<<30:
		s += fmt.Sprintf(" (%.1f GiB)", float64(n)/(1<<30))
	case n >= 1<<20:
		s += fmt.Sprintf(" (%.1f MiB)", float64(n)/(1<<20))
	}
	return s
}

// measure walks the tree as copyOut will and fails with a limitError when
// it is past lim, before anything is written. It walks to the end to say
// how large the tree is: only stat calls, cheap beside the copy refused.
func (w *Workspace) measure(ctx context.Context, lim snapLimits) error {
	var entries, size, gitEntries, gitSize int64
	err := w.root.walk(ctx, ".", false, 0, func(rel string, d fs.DirEntry) error {
		if !copied(d) {
			return nil
		}
		inGit := inGitDir(rel)
		entries++
		if inGit {
			gitEntries++
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
				if inGit {
					gitSize += info.Size()
				}
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case size > lim.bytes:
		return &limitError{key: "snapshot_max_size", found: size, limit: lim.bytes, git: gitSize}
	case entries > int64(lim.entries):
		return &limitError{key: "snapshot_max_files", found: entries, limit: int64(lim.entries), git: gitEntries}
	}
	return nil
}

// inGitDir reports whether rel, a path relative to the root, is a .git
// folder or lies in one.
func inGitDir(rel string) bool {
	for part := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}

// copied reports whether a snapshot copies d: sockets, fifos and devices
// are left out.
func copied(d fs.DirEntry) bool {
	return d.IsDir() || d.Type()&fs.ModeSymlink != 0 || d.Type().IsRegular()
}

// removeDeadPartials removes the partial folders of creates that died
// mid-copy: those old enough whose lock is free (lockPartial).
func (w *Workspace) removeDeadPartials() {
	ents, err := os.ReadDir(w.snapDir())
	if err != nil {
		return // no snapshots folder yet
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), partialSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < partialGrace {
			continue
		}
		p := filepath.Join(w.snapDir(), e.Name())
		lock, err := lockPartial(p)
		if err != nil {
			// A live create's, or gone; or the file system takes no
			// locks, and a live create's cannot be told from a dead one's.
			continue
		}
		err = os.RemoveAll(p)
		lock.Close()
		if err != nil {
			w.log.Warn("workspace: cannot remove a dead snapshot_create's copy", "backend", w.name, "folder", p, "err", err)
			continue
		}
		w.log.Info("workspace: removed the copy of a snapshot_create that did not finish", "backend", w.name, "folder", p)
	}
}

// copyOut copies the tree beneath the root into dst, never following a
// symlink. It keeps to lim itself: the tree may grow after measure.
func (w *Workspace) copyOut(ctx context.Context, dst string, lim snapLimits) (files int, size int64, err error) {
	entries := 0
	err = w.root.walk(ctx, ".", false, 0, func(rel string, d fs.DirEntry) error {
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil || !copied(d) {
			return nil // vanished meanwhile, or not copied
		}
		if entries++; entries > lim.entries {
			return &limitError{key: "snapshot_max_files", limit: int64(lim.entries), grew: true}
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := readlinkBeneath(w.root, rel)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			src, err := w.root.open(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
			if err != nil {
				return err
			}
			defer src.Close()
			out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
			if err != nil {
				return err
			}
			n, err := io.Copy(out, io.LimitReader(src, lim.bytes-size+1))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			files++
			size += n
			if err == nil && size > lim.bytes {
				err = &limitError{key: "snapshot_max_size", limit: lim.bytes, grew: true}
			}
			return err
		}
		return nil
	})
	return files, size, err
}

// readlinkBeneath reads the symlink rel through its parent opened beneath
// the root.
func readlinkBeneath(r *Root, rel string) (string, error) {
	dfd, err := r.openBeneath(filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, filepath.Base(rel), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func snapshotListTool(w *Workspace, _ context.Context, _ json.RawMessage) *toolcall.Result {
	ents, err := os.ReadDir(w.snapDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return toolcall.Errorf("snapshot_list: %v", err)
	}
	type snap struct {
		id  string
		mod time.Time
	}
	var snaps []snap
	for _, e := range ents {
		if e.IsDir() && !strings.HasSuffix(e.Name(), partialSuffix) {
			info, _ := e.Info()
			snaps = append(snaps, snap{e.Name(), info.ModTime()})
		}
	}
	if len(snaps) == 0 {
		return toolcall.Text("No snapshots yet; make one with snapshot_create")
	}
	slices.SortFunc(snaps, func(a, b snap) int { return b.mod.Compare(a.mod) })
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "%s\t%s\n", s.id, s.mod.UTC().Format(time.RFC3339))
	}
	return toolcall.Text(b.String())
}

func snapshotRestoreTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		ID string `json:"id"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("snapshot_restore: %v", err)
	}
	if !snapIDRE.MatchString(a.ID) {
		return toolcall.Errorf("snapshot_restore: %q is not a snapshot id; list them with snapshot_list", a.ID)
	}
	src := filepath.Join(w.snapDir(), a.ID)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return toolcall.Errorf("snapshot_restore: no snapshot %q; list them with snapshot_list", a.ID)
	}
	keepGit := gitLeftOut(src) && !emptyDir(filepath.Join(w.root.dir, ".git"))
	// Empty the root: RemoveAll never follows symlinks, so a link to
	// outside is removed, not what it points at.
	ents, err := os.ReadDir(w.root.dir)
	if err != nil {
		return toolcall.Errorf("snapshot_restore: %s", errText(err))
	}
	for _, e := range ents {
		if keepGit && e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.root.dir, e.Name())); err != nil {
			return toolcall.Errorf("snapshot_restore: emptying the root: %s", errText(err))
		}
	}
	files := 0
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if keepGit && rel == ".git" {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		dfd, err := w.root.openBeneath(filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		base := filepath.Base(rel)
		switch {
		case d.IsDir():
			return unix.Mkdirat(dfd, base, uint32(info.Mode().Perm()))
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return unix.Symlinkat(link, dfd, base)
		default:
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			fd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(info.Mode().Perm()))
			if err != nil {
				return err
			}
			out := os.NewFile(uintptr(fd), base)
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			files++
			return err
		}
	})
	if err != nil {
		return toolcall.Errorf("snapshot_restore stopped part way (%s); the tree may be incomplete, run snapshot_restore again", errText(err))
	}
	if keepGit {
		return toolcall.Text(fmt.Sprintf("Restored snapshot %q: %d files. The repository's .git was left as it is: this snapshot was made by an older kiln, which did not copy .git, so it holds no history to restore.", a.ID, files))
	}
	return toolcall.Text(fmt.Sprintf("Restored snapshot %q: %d files", a.ID, files))
}

// gitLeftOut reports whether snapshot src holds an empty .git folder: one
// made before snapshots copied .git (the Glob/Grep walk they used skipped
// its contents). Restoring it as it is would delete the repository's
// history, so the live .git stays.
func gitLeftOut(src string) bool {
	fi, err := os.Lstat(filepath.Join(src, ".git"))
	return err == nil && fi.IsDir() && emptyDir(filepath.Join(src, ".git"))
}

// emptyDir reports whether dir is a folder (not a link to one) holding
// nothing; a missing or unreadable folder counts as empty.
func emptyDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return true
	}
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}
