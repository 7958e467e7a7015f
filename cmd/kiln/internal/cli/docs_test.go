package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/cmd/internal/docscan"
)

// TestDocsCommands checks every kiln command line README.md and docs/
// show against the flags kiln's subcommands really take: a renamed or
// removed flag fails here, not in a reader's terminal.
func TestDocsCommands(t *testing.T) {
	kiln := docscan.CLI{Bins: []string{"kiln", "bin/kiln", "./bin/kiln", "./cmd/kiln"}, Usage: map[string]string{}}
	for _, sub := range []string{"serve", "connect", "auth login", "auth status", "auth logout", "policy explain", "version", "help"} {
		var out, errs bytes.Buffer
		Run(context.Background(), append(strings.Fields(sub), "-h"), strings.NewReader(""), &out, &errs)
		usage := out.String() + errs.String()
		if strings.Contains(usage, "unknown command") && !strings.Contains(usage, `unknown command "-h"`) {
			t.Fatalf("kiln %s: %s", sub, usage)
		}
		kiln.Usage[sub] = usage
	}
	// The hidden subcommands kiln starts itself: docs that explain the
	// confinement name them, with no flags.
	kiln.Usage[workerCommand], kiln.Usage[workspaceExec] = "", ""
	if !docscan.HelpFlags(kiln.Usage["serve"])["http"] || !docscan.HelpFlags(kiln.Usage["auth login"])["no-browser"] {
		t.Fatalf("serve's or auth login's usage lists no flags; has its output changed?\n%s\n%s", kiln.Usage["serve"], kiln.Usage["auth login"])
	}
	problems, checked, err := kiln.CheckDocs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked < 10 {
		t.Errorf("checked only %d kiln command lines in the docs; is the scanner finding them?", checked)
	}
}
