// Command docgen writes what runtime/config/table.go declares into the
// files people and editors read: runtime/config/schema/v1.json, and the
// annotated kiln.yaml (from example.tmpl) and the config reference in
// README.md (between their markers). Run it from the
// repository root as `make config-docs`; TestGeneratedDocs fails when the
// committed files differ from its output.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
	"github.com/kilnmcp/kiln/runtime/config"
)

func main() {
	if err := run("runtime/config/schema/v1.json", "README.md"); err != nil {
		fmt.Fprintf(os.Stderr, "docgen: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaPath, readmePath string) error {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return fmt.Errorf("%w (run it from the repository root)", err)
	}
	next, err := config.SpliceReference(readme)
	if err != nil {
		return fmt.Errorf("%s: %w", readmePath, err)
	}
	if err := write(schemaPath, config.GenerateSchema()); err != nil {
		return err
	}
	return write(readmePath, next)
}

// write replaces path atomically, and only when its bytes change.
func write(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.Write(path, data)
}
