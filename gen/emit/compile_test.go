package emit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Generated code is compiled in a throwaway module that requires this one
// through a replace directive: the goldens then build exactly as a user's
// program would, against the current runtime/, without writing into the
// source tree (packages under testdata/ or dot-directories cannot be
// imported by path, and a nested module path would be ambiguous with the
// real generated/). GOPROXY=off keeps it offline: every dependency is
// already in the module cache because this module builds.

const buildModule = "kilnbuild"

func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// newBuildModule returns a temporary module directory that can import the
// kiln runtime packages.
func newBuildModule(t testing.TB) string {
	t.Helper()
	root := moduleRoot(t)
	dir := t.TempDir()
	gomod := "module " + buildModule + "\n\ngo 1.26\n\nrequire github.com/kilnmcp/kiln v0.0.0\n\nreplace github.com/kilnmcp/kiln => " + root + "\n"
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	return dir
}

func goCmd(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOFLAGS=-mod=mod -buildvcs=false",
		"GOPROXY=off",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTree(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), b)
	}
}
