// Command docgen writes docs/reference/tools.md from the tool tables the
// server lists. Run it from the repository root as `make docs`.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
	"github.com/kilnmcp/kiln/runtime/tooldocs"
)

const page = "docs/reference/tools.md"

func main() {
	md, err := tooldocs.Markdown()
	if err == nil {
		if old, rerr := os.ReadFile(page); rerr != nil || !bytes.Equal(old, md) {
			err = atomicfile.Write(page, md)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tooldocs: %v (run it from the repository root)\n", err)
		os.Exit(1)
	}
}
