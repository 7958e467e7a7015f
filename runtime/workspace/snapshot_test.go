package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/config"
)

// TestConcurrentSnapshotCreates runs eight snapshot_create calls of one
// name at once. They shared one dst+".partial" folder, so they removed or
// wrote into each other's copy; now exactly one wins, the others fail
// naming the snapshot, the winner holds the whole tree and no temporary
// folder is left behind. An empty tree too: a plain rename onto an empty
// folder replaces it, which let two creates both succeed.
func TestConcurrentSnapshotCreates(t *testing.T) {
	for _, nfiles := range []int{200, 0} {
		t.Run(fmt.Sprintf("%d files", nfiles), func(t *testing.T) { raceSnapshotCreates(t, nfiles) })
	}
}

// TestConcurrentSnapshotCreatesWithoutNoReplace: on a file system without
// RENAME_NOREPLACE (renameat2 fails with EINVAL) the fallback renamed onto
// an empty snapshot, so of two creates of an empty tree both succeeded,
// the second replacing the first's snapshot. The fallback now claims the
// name under a lock; the same race has one winner. The stand-in renameat2
// holds every create until all have copied, so they all reach the
// fallback together.
func TestConcurrentSnapshotCreatesWithoutNoReplace(t *testing.T) {
	saved := renameat2
	t.Cleanup(func() { renameat2 = saved })
	for _, nfiles := range []int{0, 200} {
		t.Run(fmt.Sprintf("%d files", nfiles), func(t *testing.T) {
			var arrived atomic.Int32
			all := make(chan struct{})
			renameat2 = func(int, string, int, string, uint) error {
				if arrived.Add(1) == snapRacers {
					close(all)
				}
				select {
				case <-all:
				case <-time.After(time.Minute):
					t.Error("not every create reached the rename")
				}
				return unix.EINVAL
			}
			raceSnapshotCreates(t, nfiles)
		})
	}
}

// snapRacers is how many creates of one name raceSnapshotCreates runs.
const snapRacers = 8

func raceSnapshotCreates(t *testing.T, nfiles int) {
	f := newFixture(t, nil)
	for i := range nfiles {
		f.write(fmt.Sprintf("d%d/f%d.txt", i%10, i), strings.Repeat("x", i))
	}
	const racers = snapRacers
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		texts [racers]string
		errs  [racers]bool
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			texts[i], errs[i] = f.call("snapshot_create", map[string]any{"name": "same"})
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i := range racers {
		switch {
		case !errs[i]:
			wins++
		case !strings.Contains(texts[i], `"same"`) || !strings.Contains(texts[i], "exists already"):
			t.Errorf("a losing create said %q, want an error naming snapshot \"same\"", texts[i])
		}
	}
	if wins != 1 {
		t.Errorf("%d creates succeeded, want 1: %q", wins, texts)
	}
	ents, err := os.ReadDir(f.w.snapDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "same" {
		t.Errorf("snapshot folder holds %q, want only [same]", names)
	}
	files := 0
	err = filepath.WalkDir(filepath.Join(f.w.snapDir(), "same"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return err
	})
	if err != nil || files != nfiles {
		t.Errorf("snapshot holds %d files (%v), want %d", files, err, nfiles)
	}
}

// TestSnapshotKeepsGit: a snapshot holds what .git holds. The copy went
// through the Glob/Grep walk, which skips .git's contents, so a snapshot
// held an empty .git and restoring it emptied the repository's history.
func TestSnapshotKeepsGit(t *testing.T) {
	f := newFixture(t, nil)
	f.write(".git/HEAD", "ref: refs/heads/main\n")
	f.write(".git/objects/ab/cdef", "blob")
	f.write("src/.git/config", "[core]\n")
	f.write("a.txt", "a")
	f.expectOK("snapshot_create", map[string]any{"name": "s"})
	f.write("a.txt", "b")
	f.expectOK("snapshot_restore", map[string]any{"id": "s"})
	for rel, want := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/objects/ab/cdef": "blob", "src/.git/config": "[core]\n", "a.txt": "a"} {
		got, err := os.ReadFile(filepath.Join(f.root, rel))
		if err != nil || string(got) != want {
			t.Errorf("after restore %s = %q (%v), want %q", rel, got, err, want)
		}
	}
}

// TestRestoreOfAnOldSnapshotKeepsGit: a snapshot made before snapshots
// copied .git holds an empty .git folder; restoring it emptied the root,
// .git included, and so deleted the repository's history. The live .git
// now stays, and the answer says why; the rest of the tree is restored.
func TestRestoreOfAnOldSnapshotKeepsGit(t *testing.T) {
	f := newFixture(t, nil)
	f.write(".git/HEAD", "ref: refs/heads/main\n")
	f.write("a.txt", "now")
	f.write("new.txt", "made after the snapshot")
	old := filepath.Join(f.w.snapDir(), "old")
	for _, d := range []string{".git", "src"} {
		if err := os.MkdirAll(filepath.Join(old, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(old, "a.txt"), []byte("then"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := f.expectOK("snapshot_restore", map[string]any{"id": "old"})
	if !strings.Contains(text, ".git was left as it is") {
		t.Errorf("restore said %q, want it to say the repository's .git was kept", text)
	}
	for rel, want := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "a.txt": "then"} {
		if got, err := os.ReadFile(filepath.Join(f.root, rel)); err != nil || string(got) != want {
			t.Errorf("after restore %s = %q (%v), want %q", rel, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.root, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file made after the snapshot survived its restore (%v)", err)
	}
	if fi, err := os.Lstat(filepath.Join(f.root, "src")); err != nil || !fi.IsDir() {
		t.Errorf("the snapshot's folder src was not restored (%v)", err)
	}
}

// TestSnapshotLimits: snapshot_create copied a tree of any size into the
// state folder. Past snapshot_max_size or snapshot_max_files it now fails
// before copying, saying what it found, the limit and the key to raise,
// and leaves nothing in the snapshots folder.
func TestSnapshotLimits(t *testing.T) {
	tests := []struct {
		name         string
		files, bytes int
		want         []string
	}{
		{"within", 10, 90, nil},
		{"too many bytes", 3, 600, []string{"1800 bytes", "limit of 1000 bytes", "backends.repo.snapshot_max_size", "nothing was kept"}},
		// 40 files in 4 folders: 44 entries.
		{"too many files", 40, 1, []string{"44 files, folders and links", "limit of 20", "backends.repo.snapshot_max_files", "nothing was kept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *config.Workspace) { c.SnapshotMaxSize, c.SnapshotMaxFiles = 1000, 20 })
			for i := range tt.files {
				f.write(fmt.Sprintf("d%d/f%d", i%4, i), strings.Repeat("x", tt.bytes))
			}
			if tt.want == nil {
				f.expectOK("snapshot_create", map[string]any{"name": "s"})
				return
			}
			text := f.expectErr("snapshot_create", map[string]any{"name": "s"}, tt.want[0])
			for _, w := range tt.want[1:] {
				if !strings.Contains(text, w) {
					t.Errorf("snapshot_create = %q, want it to say %q", text, w)
				}
			}
			if ents, _ := os.ReadDir(f.w.snapDir()); len(ents) > 0 {
				t.Errorf("a refused create left %v in the snapshots folder", ents)
			}
		})
	}
}

// TestSnapshotLimitNamesGit: since snapshots copy .git, the limits count
// it, and the refusal told the model to delete what need not be kept
// without saying that .git may be most of it, inviting it to delete the
// history. The refusal now says how much .git holds and to keep it.
func TestSnapshotLimitNamesGit(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.SnapshotMaxSize, c.SnapshotMaxFiles = 1000, 20 })
	f.write(".git/objects/pack/p.pack", strings.Repeat("x", 900))
	f.write("a.txt", strings.Repeat("x", 300))
	text := f.expectErr("snapshot_create", map[string]any{"name": "s"}, "1200 bytes")
	if !strings.Contains(text, "900 bytes of it in .git") || !strings.Contains(text, "keep it") {
		t.Errorf("snapshot_create = %q, want it to say .git holds 900 bytes and is to be kept", text)
	}
	if err := os.Remove(filepath.Join(f.root, ".git/objects/pack/p.pack")); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		f.write(fmt.Sprintf(".git/refs/r%d", i), "x")
	}
	// .git, objects, pack, refs and 30 refs: 34 entries; a.txt: 35.
	text = f.expectErr("snapshot_create", map[string]any{"name": "s"}, "35 files, folders and links")
	if !strings.Contains(text, "(34 of it in .git") {
		t.Errorf("snapshot_create = %q, want it to say .git holds 34 entries", text)
	}
	if err := os.RemoveAll(filepath.Join(f.root, ".git")); err != nil {
		t.Fatal(err)
	}
	f.write("b.txt", strings.Repeat("x", 900))
	if text := f.expectErr("snapshot_create", map[string]any{"name": "s"}, "1200 bytes"); strings.Contains(text, ".git") {
		t.Errorf("snapshot_create = %q, mentions a .git the tree lacks", text)
	}
}

// TestSnapshotLimitWhileCopying: the copy keeps to the limits itself, as
// the tree may grow between measuring and copying: it stops at the limit
// and says the tree grew.
func TestSnapshotLimitWhileCopying(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a", strings.Repeat("x", 500))
	f.write("b", strings.Repeat("x", 600))
	for _, c := range []struct {
		lim snapLimits
		key string
	}{{snapLimits{bytes: 1000, entries: 20}, "snapshot_max_size"}, {snapLimits{bytes: 2000, entries: 1}, "snapshot_max_files"}} {
		dst := filepath.Join(t.TempDir(), "copy")
		if err := os.Mkdir(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		_, _, err := f.w.copyOut(t.Context(), dst, c.lim)
		var le *limitError
		if !errors.As(err, &le) || !le.grew || le.key != c.key {
			t.Errorf("copyOut with %+v = %v, want a limitError for %s saying the tree grew", c.lim, err, c.key)
		}
	}
}

// TestOpenRemovesCrashedPartials: a create killed mid-copy (kill -9) left
// its hidden .partial folder in the state folder for good. Opening the
// workspace now removes such folders, but not one a live create (of this
// kiln or another sharing the state folder) holds, nor one made too
// recently to have been locked yet.
func TestOpenRemovesCrashedPartials(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.txt", "a")
	f.expectOK("snapshot_create", map[string]any{"name": "kept"})
	old := time.Now().Add(-time.Hour)
	partial := func(name string, mod time.Time) string {
		p := filepath.Join(f.w.snapDir(), name+".123"+partialSuffix)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "sub", "f"), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crashed := partial("crashed", old)
	fresh := partial("fresh", time.Now())
	live := partial("live", old)
	lock, err := lockPartial(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()

	cfg := f.w.cfg
	w, err := Open(&config.Backend{Name: "repo", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Lstat(crashed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the crashed create's folder is still there (%v)", err)
	}
	for _, p := range []string{fresh, live, filepath.Join(f.w.snapDir(), "kept", "a.txt")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("Open removed %s: %v", p, err)
		}
	}
}

// TestSnapshotCreateWithoutLocks: on a file system that takes no flock
// locks (NFS refuses an exclusive one on a folder with EBADF, a mount
// without a lock manager answers ENOLCK) every snapshot_create failed once
// creates locked their partial folder, and so did the rename fallback of
// the file systems without RENAME_NOREPLACE, the same ones. A create now
// goes on unlocked there, and Open keeps a partial folder it cannot tell
// from a live create's.
func TestSnapshotCreateWithoutLocks(t *testing.T) {
	savedFlock, savedRename := flock, renameat2
	t.Cleanup(func() { flock, renameat2 = savedFlock, savedRename })
	for _, errno := range []unix.Errno{unix.EBADF, unix.ENOLCK, unix.EOPNOTSUPP} {
		for _, noReplace := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v, RENAME_NOREPLACE %v", errno, noReplace), func(t *testing.T) {
				flock = func(int, int) error { return errno }
				renameat2 = savedRename
				if !noReplace {
					renameat2 = func(int, string, int, string, uint) error { return unix.EINVAL }
				}
				f := newFixture(t, nil)
				f.write("a.txt", "a")
				f.expectOK("snapshot_create", map[string]any{"name": "one"})
				if text, isErr := f.call("snapshot_create", map[string]any{"name": "one"}); !isErr || !strings.Contains(text, "exists already") {
					t.Errorf("a second create of one name said %q (error %v), want that it exists already", text, isErr)
				}
				if _, err := os.Lstat(filepath.Join(f.w.snapDir(), "one", "a.txt")); err != nil {
					t.Errorf("the snapshot lacks a.txt: %v", err)
				}
				partial := filepath.Join(f.w.snapDir(), "two.123"+partialSuffix)
				if err := os.Mkdir(partial, 0o700); err != nil {
					t.Fatal(err)
				}
				old := time.Now().Add(-time.Hour)
				if err := os.Chtimes(partial, old, old); err != nil {
					t.Fatal(err)
				}
				cfg := f.w.cfg
				w, err := Open(&config.Backend{Name: "repo", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if _, err := os.Lstat(partial); err != nil {
					t.Errorf("Open removed a partial folder it could not lock: %v", err)
				}
			})
		}
	}
}
