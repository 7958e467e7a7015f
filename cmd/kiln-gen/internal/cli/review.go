package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/poison"
)

// review is the poisoning part of the reviewer's summary that record, diff
// and emit print: each finding as a SUSPICIOUS line, the ones accepted by
// backends.NAME.accept_findings, and accept entries that matched nothing.
type review struct {
	kept, accepted []poison.Finding
	unused         []string
}

// checkPoison checks ms (against prev for growth) and applies accept.
func checkPoison(ms, prev []*manifest.Manifest, accept map[string][]string) review {
	var r review
	r.kept, r.accepted, r.unused = poison.Accept(poison.Check(ms, prev), accept)
	return r
}

func (r review) print(w io.Writer) {
	if len(r.kept)+len(r.accepted)+len(r.unused) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, f := range r.kept {
		fmt.Fprintln(w, f.Line())
	}
	for _, f := range r.accepted {
		fmt.Fprintf(w, "accepted %s.%s %s: %s (backends.%s.accept_findings)\n", f.Backend, f.Subject, f.Field, f.Key(), f.Backend)
	}
	for _, u := range r.unused {
		b, k, _ := strings.Cut(u, ": ")
		fmt.Fprintf(w, "stale backends.%s.accept_findings entry %s: it matches no finding any more; remove it\n", b, k)
	}
}

// strictFailure explains an emit or record --strict failure: which
// findings, and the two ways out.
func (r review) strictFailure(cmd string) string {
	var ids []string
	for _, f := range r.kept {
		ids = append(ids, fmt.Sprintf("%s.%s (%s)", f.Backend, f.Subject, f.Rule))
	}
	f := r.kept[0]
	return fmt.Sprintf("kiln-gen %s --strict: %d poisoning finding(s) not accepted: %s. "+
		"Read the SUSPICIOUS lines above. If a backend's text really instructs the model, fix or drop that backend (a changed server: pin its previous version and re-record). "+
		"If a finding is a false positive, accept it in the config after review, with a comment saying why:\n"+
		"  backends:\n    %s:\n      accept_findings: [%s]\n"+
		"and pass that config (--accept-config; make generate passes $(CONFIG))",
		cmd, len(r.kept), strings.Join(ids, ", "), f.Backend, f.Key())
}

// acceptLists loads the accept_findings of the config at path. A missing
// file that the user did not name is no accept lists (said on stderr).
func acceptLists(path string, named bool, stderr io.Writer) (map[string][]string, bool) {
	if _, err := os.Stat(path); !named && errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "kiln-gen: no %s here, so no backends.NAME.accept_findings apply (pass --accept-config)\n", path)
		return nil, true
	}
	cfg, ok := loadConfig(path, stderr)
	if !ok {
		return nil, false
	}
	return cfg.AcceptedFindings(), true
}
