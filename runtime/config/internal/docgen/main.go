// Command docgen writes what runtime/config/table.go declares into the
// files people and editors read: runtime/config/schema/v1.json, and the
// annotated kiln.yaml (from example.tmpl) and the config reference in
// docs/reference/config.md (between their markers). Run it from the
// repository root as `make docs`; TestGeneratedDocs fails when the
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
	if err := run("runtime/config/schema/v1.json", "docs/reference/config.md"); err != nil {
		fmt.Fprintf(os.Stderr, "docgen: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaPath, pagePath string) error {
	page, err := os.ReadFile(pagePath)
	if err != nil {
		return fmt.Errorf("%w (run it from the repository root)", err)
	}
	next, err := config.SpliceReference(page)
	if err != nil {
		return fmt.Errorf("%s: %w", pagePath, err)
	}
	if err := write(schemaPath, config.GenerateSchema()); err != nil {
		return err
	}
	return write(pagePath, next)
}

// write replaces path atomically, and only when its bytes change.
func write(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.Write(path, data)
}
