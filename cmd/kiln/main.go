// Command kiln is the MCP gateway: one server that exposes many backend MCP
// servers' tools through its meta-tools.
package main

import (
	"context"
	"os"

	"github.com/kilnmcp/kiln/cmd/kiln/internal/cli"
)

func main() { os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
