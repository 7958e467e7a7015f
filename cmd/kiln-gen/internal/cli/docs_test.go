package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/kilnmcp/kiln/cmd/internal/docscan"
)

// TestDocsCommands checks every kiln-gen command line README.md and docs/
// show against the flags kiln-gen's subcommands really take.
func TestDocsCommands(t *testing.T) {
	gen := docscan.CLI{Bins: []string{"kiln-gen", "bin/kiln-gen", "./bin/kiln-gen", "./cmd/kiln-gen"}, Usage: map[string]string{}}
	for _, c := range commands() {
		var out, errs bytes.Buffer
		Run(context.Background(), []string{c.name, "-h"}, nil, &out, &errs)
		gen.Usage[c.name] = out.String() + errs.String()
	}
	if !docscan.HelpFlags(gen.Usage["record"])["config"] {
		t.Fatalf("record's usage lists no -config; has its output changed?\n%s", gen.Usage["record"])
	}
	problems, checked, err := gen.CheckDocs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked < 5 {
		t.Errorf("checked only %d kiln-gen command lines in the docs; is the scanner finding them?", checked)
	}
}
