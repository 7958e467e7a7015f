// Package atomicfile writes files so that a reader (or a crash) sees either
// the old contents or the new, never half a file: manifests, usage counts
// and other state kiln keeps on disk all go through it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data via a synced temporary file in the same
// folder and a rename, creating the folder if needed. The file ends up
// with mode 0644.
func Write(path string, data []byte) error { return WriteMode(path, data, 0o644) }

// WriteMode is Write with the file's mode, e.g. 0600 for files holding
// credentials.
func WriteMode(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
