package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// explainConfig is the example of docs/policy.md: admins may do anything,
// destructive tools are denied to everyone else, CI reads.
const explainConfig = `version: 1
policies:
  - name: admins
    match: {kind: jwt, claims: {scope: admin}}
    allow: ["*"]
  - name: no-destructive
    annotations: {destructiveHint: true}
    deny: ["*"]
  - name: ci
    match: {kind: jwt, claims: {groups: [ci]}}
    allow: ["filesystem.*", "everything.echo"]
    rate: 5
    max_in_flight: 2
`

func TestPolicyExplain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(explainConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		identity string
		tool     string
		want     []string
	}{
		{"destructive tool denied by its annotations", "jwt:alice groups=ci,ops", "filesystem.write_file", []string{
			"identity: jwt alice (claims groups=[ci ops])",
			`"destructiveHint":true`,
			"decision: denied",
			"rule:     no-destructive (" + path + " line 6)",
			`why:      skipped admins: claim scope does not contain "admin"; then no-destructive denies filesystem.write_file (deny glob "*")`,
			"limits:   rate 5/s burst 5, max_in_flight 2, from ci (line 9)"}},
		{"read tool allowed by the ci glob", "jwt:alice groups=ci", "filesystem.read_file", []string{
			"decision: allowed", "rule:     ci (", `ci allows filesystem.read_file (allow glob "filesystem.*")`}},
		{"admin scope word", "jwt:root scope=admin", "filesystem.write_file", []string{"decision: allowed", "rule:     admins ("}},
		{"nothing decides", "local:bob", "everything.echo", []string{
			"decision: denied", "rule:     none (the default)", "no rule decides", "limits:   none"}},
		{"a tool not compiled in", "jwt:alice groups=ci", "github.get_issue", []string{
			"not compiled into this kiln", "decision: denied"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), []string{"policy", "explain", "--config", path, tc.identity, tc.tool}, nil, &out, &errb)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	for _, bad := range [][]string{{"policy"}, {"policy", "explain", "robot:x", "a.b"}, {"policy", "explain", "jwt:x"}} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append(bad, "--config", path), nil, &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want usage", bad, code)
		}
	}
}
