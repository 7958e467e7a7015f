package workspace

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

// warmScript fills the workspace's private Go build cache: go vet of
// every package (what the post-edit check runs on one) and the test
// binaries' compilation (what run_tests needs), without running a test.
// A cold cache made the first run_tests take 18 s and skipped every
// post-edit check until it was warm.
const warmScript = `go vet ./... >/dev/null 2>&1; go test -run '^$' -exec /bin/true ./... >/dev/null 2>&1; exit 0`

// warm starts warmScript in the background when the root is a Go module
// and go is installed; warming is set until it ends.
func (w *Workspace) warm() {
	var st unix.Stat_t
	if unix.Fstatat(w.root.fd, "go.mod", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if _, err := exec.LookPath("go"); err != nil {
		return
	}
	s, err := w.spawnAs("warm", 0, warmScript)
	if err != nil {
		w.log.Warn("workspace: cannot warm the Go build cache", "backend", w.name, "err", err)
		return
	}
	w.warming.Store(true)
	w.mu.Lock()
	w.warmer = s
	w.mu.Unlock()
	go func() {
		<-s.done
		w.warming.Store(false)
	}()
}
