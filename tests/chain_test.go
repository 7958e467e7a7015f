//go:build e2e

package tests

import (
	"path/filepath"
	"strings"
	"testing"
)

func chainTS(code string) map[string]any { return map[string]any{"code": code} }

func TestCallToolChainTiers(t *testing.T) {
	demo := filepath.Join(repoRoot(t), "tests/demo")
	for name, connect := range map[string]func(t *testing.T) session{
		"mcpgo-stdio": func(t *testing.T) session { return newMCPGoStdio(t) },
		"gosdk-http":  func(t *testing.T) session { return newSDKHTTP(t, startHTTP(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			s := connect(t)
			tests := []struct {
				name, code string
				wantErr    bool
				contains   []string
			}{
				{"tier 2 const/return", `const r = await everything.echo({message: 'tier two'}); return r;`, false, []string{"Echo: tier two"}},
				{"tier 2 bare call with original name", `globalThis["everything"]["get-sum"]({a: 20, b: 22,})`, false, []string{"42"}},
				{"tier 2 introspection", `__getToolInterface("everything.get-sum")`, false, []string{`"input_schema"`, "First number"}},
				{"tier 3 program with Promise.all", `
					const sum = await everything.get_sum({a: 1, b: 2});
					const [e1, e2] = await Promise.all([
						everything.echo({message: "left"}),
						everything.echo({message: "right"}),
					]);
					console.log("calls done");
					return {sum, e1, e2};`, false, []string{"The sum of 1 and 2 is 3", "Echo: left", "Echo: right", "[console output]", "calls done"}},
				{"tier 3 typescript types", `
					interface Entry { name: string }
					const names: string[] = ["a", "b"];
					const out: Entry[] = names.map((n): Entry => ({name: n.toUpperCase()}));
					return out;`, false, []string{`"name": "A"`, `"name": "B"`}},
				{"tier 3 loop over filesystem tools", `
					const listing = await filesystem.list_directory({path: ` + "`" + demo + "`" + `});
					const files = listing.content.split("\n").filter(l => l.startsWith("[FILE]")).map(l => l.slice(7).trim());
					const heads = [];
					for (const f of files) {
						const text = await filesystem.read_text_file({path: ` + "`" + demo + "/${f}`" + `, head: 1});
						heads.push({file: f, first: text.content.split("\n")[0]});
					}
					return heads;`, false, []string{"notes.txt", "Kiln demo notes", "README.md"}},
				{"tier 3 thrown error is an error", `throw new Error("nope from the script")`, true, []string{"nope from the script"}},
				{"tier 3 backend error rejects", `
					try { await filesystem.read_text_file({path: "/etc/hostname"}); return "no error"; }
					catch (e) { return "caught: " + e.message; }`, false, []string{"caught:"}},
				{"tier 3 syntax error names the line", "const x = 1;\nconst y = ;\nreturn y;", true, []string{"line 2", "const y = ;"}},
				{"misspelled backend gets a hint", `return await everythng.echo({message: "x"})`, true, []string{"everything"}},
				// The worker's hints know the compiled backends' tools from
				// the bridge table kiln serve sends it.
				{"misspelled tool gets a hint", `const x = 1; return await everything.get_sun({a: x, b: 2})`, true, []string{"backend everything has no tool get_sun; did you mean get_sum"}},
				{"tool called as a global gets a hint", `const x = 1; return await get_sum({a: x, b: 2})`, true, []string{"get_sum is a tool, not a global; call it on its backend: everything.get_sum({...})"}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					r := callReady(t, s, "call_tool_chain", chainTS(tc.code))
					if r.IsError != tc.wantErr {
						t.Fatalf("isError=%v, want %v: %s", r.IsError, tc.wantErr, r.Text())
					}
					for _, w := range tc.contains {
						if !strings.Contains(r.Text(), w) {
							t.Errorf("result lacks %q:\n%s", w, r.Text())
						}
					}
				})
			}
		})
	}
}
