// Command kiln-gen records backend MCP servers into manifests and emits the
// generated Go code kiln is compiled from.
package main

import (
	"context"
	"os"

	"github.com/kilnmcp/kiln/cmd/kiln-gen/internal/cli"
)

func main() { os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
