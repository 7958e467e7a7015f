package kiln

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/kilnmcp/kiln"

// TestImportRules enforces the team style guide's layout (docs/architecture.md, "Layout"): dependencies point one
// way (cmd → generated → runtime, gen → runtime), and each third-party SDK
// is confined to the one package that owns it.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// owner lists, for a third-party import prefix, the only packages that
	// may import it.
	owner := map[string][]string{
		"github.com/dop251/goja":                   {module + "/runtime/sandbox"},
		"github.com/evanw/esbuild":                 {module + "/runtime/sandbox"},
		"github.com/mark3labs/mcp-go/server":       {module + "/runtime/server"},
		"github.com/mark3labs/mcp-go/client":       {module + "/runtime/backend", module + "/tests"},
		"github.com/dave/jennifer":                 {module + "/gen"},
		"github.com/dave/dst":                      {module + "/runtime/workspace/goedit"},
		"github.com/spf13/viper":                   {module + "/runtime/config"},
		"github.com/kelindar/search":               {module + "/runtime/search/semantic"},
		"github.com/modelcontextprotocol/go-sdk":   {module + "/tests", module + "/runtime/oauth"},
		"github.com/santhosh-tekuri/jsonschema/v6": {module + "/runtime/schema", module + "/runtime/config"},
		"github.com/redis/go-redis":                {module + "/runtime/state"},
		// The rooms of the operations signals, OAuth, resource routing,
		// the config file and name suggestions.
		"github.com/prometheus/client_golang": {module + "/runtime/telemetry"},
		"go.opentelemetry.io/otel":            {module + "/runtime/telemetry", module + "/tests"},
		"golang.org/x/oauth2":                 {module + "/runtime/oauth"},
		"github.com/yosida95/uritemplate":     {module + "/runtime/route"},
		"go.yaml.in/yaml":                     {module + "/runtime/config"},
		"github.com/agnivade/levenshtein":     {module + "/runtime/registry"},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		rel := strings.TrimPrefix(pkg, module)
		for _, imp := range imports {
			checked++
			irel, internal := strings.CutPrefix(imp, module)
			switch {
			case strings.HasPrefix(rel, "/runtime/") && internal &&
				(strings.HasPrefix(irel, "/gen") || strings.HasPrefix(irel, "/generated") || strings.HasPrefix(irel, "/cmd")):
				t.Errorf("%s imports %s: runtime/ must not import gen/, generated/ or cmd/", pkg, imp)
			case (rel == "/gen" || strings.HasPrefix(rel, "/gen/")) && internal &&
				(strings.HasPrefix(irel, "/generated") || irel == "/runtime/server" || strings.HasPrefix(irel, "/cmd")):
				t.Errorf("%s imports %s: gen/ must not import generated/, the server or cmd/", pkg, imp)
			case strings.HasPrefix(rel, "/generated") && internal && !strings.HasPrefix(irel, "/generated") &&
				irel != "/runtime/manifest" && irel != "/runtime/registry" && irel != "/runtime/toolcall":
				t.Errorf("%s imports %s: generated code may only use the runtime APIs named in gen/runtimeapi.go", pkg, imp)
			case strings.HasPrefix(rel, "/cmd/kiln-gen/") && internal &&
				(strings.HasPrefix(irel, "/generated") || irel == "/runtime/server"):
				// kiln-gen's diff and eval left gen/ but not its rule: the
				// generator never runs what it generates, nor the server.
				t.Errorf("%s imports %s: kiln-gen must not import generated/ or the server", pkg, imp)
			case internal && strings.HasPrefix(irel, "/tests"):
				t.Errorf("%s imports %s: nothing imports tests/", pkg, imp)
			}
			for prefix, owners := range owner {
				if !strings.HasPrefix(imp, prefix) {
					continue
				}
				ok := false
				for _, o := range owners {
					ok = ok || pkg == o || strings.HasPrefix(pkg, o+"/")
				}
				if !ok {
					t.Errorf("%s imports %s; only %v may", pkg, imp, owners)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d imports; go list output looks wrong:\n%s", checked, out)
	}
}
