package cli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/generated"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

const policyUsage = `usage: kiln policy explain [--config FILE] IDENTITY TOOL

Prints which rule of the config's policies decides whether IDENTITY may use
TOOL (backend.tool), why the rules before it did not, and the identity's limits.

IDENTITY is KIND[:SUBJECT] followed by CLAIM=VALUE[,VALUE...] words, quoted as
one argument: KIND is jwt, token, local or addr; a claim with several values is
an array, as a JWT carries groups. Examples:
  kiln policy explain "jwt:alice groups=ci,ops scope=deploy" github.delete_repo
  kiln policy explain local:bob everything.echo
`

// runPolicy is kiln policy: explain, offline, from the config and the
// compiled tools (their annotations), as a running kiln would decide.
func runPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "explain" {
		fmt.Fprint(stderr, policyUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("kiln policy explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default: $KILN_CONFIG, else ./kiln.yaml)")
	var pos []string
	for rest := args[1:]; ; rest = fs.Args()[1:] {
		if fs.Parse(rest) != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
	}
	if len(pos) != 2 {
		fmt.Fprint(stderr, policyUsage)
		return exitUsage
	}
	id, err := policy.ParseIdentity(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	cfg, err := loadServeConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	reg := registry.New()
	if err := generated.RegisterAll(reg); err != nil {
		fmt.Fprintf(stderr, "kiln: compiled tools: %v\n", err)
		return exitFail
	}
	tool, note := explainTool(reg, pos[1])
	set := policy.Compile(cfg.Policies)
	d := set.Decide(id, tool)

	fmt.Fprintf(stdout, "identity: %s%s\n", id, claimText(id))
	fmt.Fprintf(stdout, "tool:     %s%s\n", tool.ID(), note)
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	fmt.Fprintf(stdout, "decision: %s\n", verdict)
	if d.Rule >= 0 {
		p := cfg.Policies[d.Rule]
		fmt.Fprintf(stdout, "rule:     %s (%s line %d)\n", p.Name, cfg.Path, p.Line)
	} else {
		fmt.Fprintf(stdout, "rule:     none (the default)\n")
	}
	fmt.Fprintf(stdout, "why:      %s\n", d.Why)
	if p, ok := set.LimitsFor(id); ok {
		var l []string
		if p.Rate > 0 {
			l = append(l, fmt.Sprintf("rate %g/s burst %d", p.Rate, p.Burst))
		}
		if p.MaxInFlight > 0 {
			l = append(l, fmt.Sprintf("max_in_flight %d", p.MaxInFlight))
		}
		fmt.Fprintf(stdout, "limits:   %s, from %s (line %d)\n", strings.Join(l, ", "), p.Name, p.Line)
	} else {
		fmt.Fprintf(stdout, "limits:   none\n")
	}
	return exitOK
}

// explainTool is name as the guard sees it: the compiled tool with its
// annotations, or an unlisted one (a backend not compiled in).
func explainTool(reg *registry.Registry, name string) (policy.Tool, string) {
	if t, err := reg.Resolve(name); err == nil {
		note := ""
		if len(t.Annotations) > 0 {
			note = " (annotations " + string(t.Annotations) + ")"
		}
		return policy.Tool{Backend: t.Backend, Name: t.Name, Annotations: t.Annotations}, note
	}
	b, n, _ := strings.Cut(name, ".")
	return policy.Tool{Backend: b, Name: n, Unlisted: true}, " (not compiled into this kiln: its annotations are unknown)"
}

func claimText(id toolcall.Identity) string {
	if len(id.Claims) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(id.Claims)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, id.Claims[k]))
	}
	return " (claims " + strings.Join(parts, " ") + ")"
}
