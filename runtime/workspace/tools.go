package workspace

import (
	"encoding/json"
)

// Tool hints (MCP annotations): clients ask before running a tool that is
// not read-only, warn more for destructive ones, retry idempotent ones,
// and treat open-world ones as reaching past the workspace. Every
// workspace tool sets all four: a missing hint reads as its worst case
// (destructive, open-world).
var (
	readOnly  = hints{ReadOnly: true, Idempotent: true}
	reads     = hints{ReadOnly: true} // BashOutput: reading consumes the output
	rewrites  = hints{Destructive: true, Idempotent: true}
	changes   = hints{Destructive: true} // Edit, Bash
	checks    = hints{Idempotent: true}  // run_*: build caches, nothing of the tree
	addsState = hints{}                  // snapshot_create: a new copy, nothing lost
)

type hints struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// tools is the workspace's tool table: names and argument shapes follow
// Claude Code's built-in tools verbatim (PascalCase), the project-native
// tools are snake_case. The schemas are kiln's source, so every binary
// serves them without a recorded manifest; Call checks arguments against
// them (args.go), so every field they advertise is enforced.
var tools = []Tool{
	{Name: "Read", call: readTool, hints: readOnly,
		Description: "Reads a file from the workspace. file_path is absolute inside the workspace root or relative to it. Returns whole lines from offset (1-based) in cat -n format: up to limit lines (default 2000) and as many as fit this workspace's output budget; when lines remain it ends with the offset to continue from. Lines longer than 2000 characters are cut. Line ends are shown without \\r; Edit matches a CRLF file's lines all the same. Images (png, jpg, gif, webp) come back as image content.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to read"},
			"offset":{"type":"integer","minimum":1,"description":"The line number to start reading from (1-based)"},
			"limit":{"type":"integer","minimum":1,"description":"The number of lines to read"}},"required":["file_path"],"additionalProperties":false}`)},
	{Name: "Write", writes: true, call: writeTool, hints: rewrites,
		Description: "Writes a file in the workspace, replacing it atomically if it exists and creating parent folders. Go files get gofmt and go vet findings appended.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to write"},
			"content":{"type":"string","description":"The content to write to the file"}},"required":["file_path","content"],"additionalProperties":false}`)},
	{Name: "Edit", writes: true, call: editTool, hints: changes,
		Description: "Replaces exact text in a file. Fails if old_string is not found, or is found more than once unless replace_all is true. In a file with CRLF line ends, \\n in old_string and new_string stands for \\r\\n. A [REDACTED:…] marker copied from Read's output matches the secret it hides, and the same marker in new_string keeps that secret. Go files get gofmt and go vet findings appended.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to modify"},
			"old_string":{"type":"string","description":"The text to replace"},
			"new_string":{"type":"string","description":"The text to replace it with (must be different from old_string)"},
			"replace_all":{"type":"boolean","default":false,"description":"Replace all occurrences of old_string"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`)},
	{Name: "Glob", call: globTool, hints: readOnly,
		Description: "Finds files by glob pattern (** matches any folders, {a,b} alternatives), newest first, at most 100. Like ripgrep it skips what .gitignore and .ignore files exclude and hidden files and folders, unless hidden or no_ignore says otherwise.",
		InputSchema: schema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The glob pattern to match files against, e.g. **/*.go"},
			"path":{"type":"string","description":"The folder to search in (default: the workspace root)"},
			"hidden":{"type":"boolean","default":false,"description":"Also match hidden files and folders (names starting with .)"},
			"no_ignore":{"type":"boolean","default":false,"description":"Also match files .gitignore and .ignore exclude"}},"required":["pattern"],"additionalProperties":false}`)},
	{Name: "Grep", call: grepTool, hints: readOnly,
		Description: "Searches file contents with a regular expression (RE2 syntax). output_mode files_with_matches (default, newest first), content or count; glob or type filter files. Like ripgrep it skips what .gitignore and .ignore files exclude and hidden files and folders, unless hidden or no_ignore says otherwise. Output stops at whole lines within the output budget; offset continues past what was shown.",
		InputSchema: schema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The regular expression to search for"},
			"path":{"type":"string","description":"File or folder to search in (default: the workspace root)"},
			"glob":{"type":"string","description":"Glob to filter files, e.g. *.js or *.{ts,tsx}"},
			"type":{"type":"string","description":"File type to search, as ripgrep names them: go, js, ts, tsx, py, rust, java, kotlin, swift, cs, php, c, cpp, rb, …"},
			"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"default":"files_with_matches"},
			"-i":{"type":"boolean","description":"Case insensitive search"},
			"-n":{"type":"boolean","default":true,"description":"Show line numbers (content mode)"},
			"-A":{"type":"integer","minimum":0,"maximum":10000,"description":"Lines to show after each match (content mode)"},
			"-B":{"type":"integer","minimum":0,"maximum":10000,"description":"Lines to show before each match (content mode)"},
			"-C":{"type":"integer","minimum":0,"maximum":10000,"description":"Lines to show before and after each match (content mode)"},
			"head_limit":{"type":"integer","minimum":1,"description":"Keep only the first N lines or entries"},
			"offset":{"type":"integer","minimum":0,"description":"Skip the first N lines or entries (to continue where the output stopped)"},
			"multiline":{"type":"boolean","description":"Let . match newlines and patterns span lines"},
			"hidden":{"type":"boolean","default":false,"description":"Also search hidden files and folders (names starting with .)"},
			"no_ignore":{"type":"boolean","default":false,"description":"Also search files .gitignore and .ignore exclude"}},"required":["pattern"],"additionalProperties":false}`)},
	{Name: "Bash", call: bashTool, hints: changes,
		Description: "Runs a bash command in the workspace root, confined to it: no files outside the root and a private temporary folder, no network unless the workspace allows it, only the configured environment. Each call starts a new shell in the root: cd, exported variables and shell options do not carry over to the next call (chain commands with && or cd in the same command). A non-zero exit is an error result; the text starts with the exit code, then the output (stdout and stderr). At the timeout the whole process group is killed and the exit code is 124. With run_in_background the command keeps running (timeout, if given, still ends it); read it with BashOutput.",
		InputSchema: schema(`{"type":"object","properties":{
			"command":{"type":"string","description":"The command to execute"},
			"timeout":{"type":"integer","minimum":1,"description":"Optional timeout in milliseconds"},
			"description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words"},
			"run_in_background":{"type":"boolean","description":"Run in the background; read its output later with BashOutput"}},"required":["command"],"additionalProperties":false}`)},
	{Name: "BashOutput", call: bashOutputTool, hints: reads,
		Description: "Returns the new output of a background shell since the last read, and whether it is still running or how it ended. A finished or killed shell keeps its status and unread output until read.",
		InputSchema: schema(`{"type":"object","properties":{
			"bash_id":{"type":"string","description":"The ID of the background shell"},
			"filter":{"type":"string","description":"Optional regular expression; only matching lines are returned (^ and $ anchor each line)"}},"required":["bash_id"],"additionalProperties":false}`)},
	{Name: "KillShell", call: killShellTool, hints: rewrites,
		Description: "Kills a background shell and everything it started. Its status and unread output stay readable with BashOutput.",
		InputSchema: schema(`{"type":"object","properties":{
			"shell_id":{"type":"string","description":"The ID of the background shell to kill"}},"required":["shell_id"],"additionalProperties":false}`)},
	{Name: "run_tests", call: verifyTool("run_tests", func(p project, path, name string) string { return p.tests(path, name) }), hints: checks,
		Description: "Runs the project's tests, detected from the root: go.mod → go test, package.json → its test script, pyproject.toml, setup.cfg, setup.py, pytest.ini or tox.ini → python -m pytest (with the project's .venv when there is one). path narrows to a package, folder or file; name to the tests whose name matches. A failed run is an error result.",
		InputSchema: schema(`{"type":"object","properties":{
			"path":{"type":"string","description":"Package, folder or test file to run, relative to the root (Go: ./pkg/..., JS: a test file, Python: tests/test_x.py)"},
			"name":{"type":"string","description":"Only tests whose name matches (go test -run, jest/vitest -t, pytest -k)"},
			"timeout":{"type":"integer","minimum":1,"description":"Optional timeout in milliseconds (default: the Bash timeout)"}},"additionalProperties":false}`)},
	{Name: "run_lint", call: verifyTool("run_lint", func(p project, _, _ string) string { return p.lint }), hints: checks,
		Description: "Runs the project's linters: go.mod → go vet ./... and gofmt -l, package.json → its lint script, Python → ruff. Findings are an error result.",
		InputSchema: verifySchema},
	{Name: "run_typecheck", call: verifyTool("run_typecheck", func(p project, _, _ string) string { return p.typechek }), hints: checks,
		Description: "Type-checks the project: go.mod → go build ./..., package.json → its typecheck script or tsc --noEmit, Python → mypy. Errors are an error result.",
		InputSchema: verifySchema},
	{Name: "snapshot_create", call: snapshotCreateTool, hints: addsState,
		Description: "Saves an exact copy of the workspace tree, to compare with snapshot_diff or go back to with snapshot_restore.",
		InputSchema: schema(`{"type":"object","properties":{"name":{"type":"string","description":"Optional id (lowercase letters, digits, - and _); default: the time"}},"additionalProperties":false}`)},
	{Name: "snapshot_list", call: snapshotListTool, hints: readOnly,
		Description: "Lists the workspace's snapshots, newest first.",
		InputSchema: schema(`{"type":"object","properties":{},"additionalProperties":false}`)},
	{Name: "snapshot_diff", call: snapshotDiffTool, hints: readOnly,
		Description: "Shows what changed in the workspace since a snapshot: files added, removed and changed, with a unified diff of changed text files.",
		InputSchema: schema(`{"type":"object","properties":{
			"id":{"type":"string","description":"The snapshot id from snapshot_list"},
			"path":{"type":"string","description":"Only this file or folder, relative to the root"}},"required":["id"],"additionalProperties":false}`)},
	{Name: "snapshot_restore", writes: true, call: snapshotRestoreTool, hints: rewrites,
		Description: "Replaces the whole workspace tree with a snapshot (files not in the snapshot are deleted).",
		InputSchema: schema(`{"type":"object","properties":{"id":{"type":"string","description":"The snapshot id from snapshot_list"}},"required":["id"],"additionalProperties":false}`)},
	{Name: "snapshot_delete", call: snapshotDeleteTool, hints: rewrites,
		Description: "Deletes a snapshot, freeing its space; the workspace tree is not touched.",
		InputSchema: schema(`{"type":"object","properties":{"id":{"type":"string","description":"The snapshot id from snapshot_list"}},"required":["id"],"additionalProperties":false}`)},
	{Name: "edit_function_body", writes: true, call: editFunctionBodyTool, hints: rewrites,
		Description: "Replaces the body of one Go function or method, keeping its signature, its doc comment and every comment outside the body byte for byte, then gofmt. new_body is the statements between the braces (a whole { … } block is accepted too); it must parse, or nothing is written. Returns a unified diff and the post-edit check. Go only: for TypeScript, JavaScript and Python use Edit.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The .go file that declares the function"},
			"function":{"type":"string","description":"The function: Name, or Type.Method for a method (pointer or value receiver)"},
			"new_body":{"type":"string","description":"The new statements of the body, without the surrounding braces"}},"required":["file_path","function","new_body"],"additionalProperties":false}`)},
	{Name: "insert_after_method", writes: true, call: insertAfterMethodTool, hints: changes,
		Description: "Inserts Go declarations (methods, functions, types, vars, consts; no imports) into a file right after method type.method, or, without method, after the last method of type in that file (after the type's declaration when the file has no method of it). The code must parse and must not redeclare a function of the file, or nothing is written; comments stay where they were, then gofmt. Returns a unified diff and the post-edit check. Go only.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The .go file to insert into"},
			"type":{"type":"string","description":"The receiver type whose method the code goes after, e.g. Server"},
			"method":{"type":"string","description":"The method to insert after; omit to insert after the type's last method in the file"},
			"code":{"type":"string","description":"One or more whole Go declarations, with their doc comments"}},"required":["file_path","type","code"],"additionalProperties":false}`)},
	{Name: "change_function_signature", writes: true, call: changeSignatureTool, hints: changes,
		Description: "Changes the parameters of a Go function or method and rewrites every call of it in the Go module that holds the file (all files written or none), keeping comments; then gofmt. params is the new parameter list in order: an existing name keeps that parameter (type retypes it), a new name needs type and default_value, the expression every existing call passes; a parameter left out is removed and its argument dropped at every call. results, when given, replaces the result list (calls are not rewritten for it). Refuses, writing nothing, when a use cannot be rewritten or told apart: the function used as a value, a method an interface of the module declares, a call whose receiver's type comes from outside the module (only the module's own source is loaded), a variadic function, a file that does not parse. Returns the call sites, a unified diff and the post-edit check. Go only.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The .go file that declares the function"},
			"function":{"type":"string","description":"The function: Name, or Type.Method for a method"},
			"params":{"type":"array","description":"The new parameters in order, each {name, type, default_value}: name an existing parameter to keep it (type retypes it), or a new name with type and default_value (the Go expression passed at every existing call)","items":{"type":"object","properties":{
				"name":{"type":"string","description":"An existing parameter's name to keep it, or a new name"},
				"type":{"type":"string","description":"The Go type; for an existing parameter, a new type (omit to keep it)"},
				"default_value":{"type":"string","description":"For a new parameter: the Go expression passed at every existing call site"}},"required":["name"],"additionalProperties":false}},
			"results":{"type":"string","description":"Optional new result list, e.g. error or (int, error); an empty string for none"}},"required":["file_path","function","params"],"additionalProperties":false}`)},
	{Name: "secrets_available", call: secretsAvailableTool, hints: readOnly,
		Description: "Lists the names, never the values, of the secrets and variables a Bash command in this workspace can read: each bash.env entry and whether kiln's environment has it set, and the ${VAR} references of the workspace's config with where they are used. Call it before a command that needs a token (GITHUB_TOKEN, NPM_TOKEN) to know whether it is there.",
		InputSchema: schema(`{"type":"object","properties":{},"additionalProperties":false}`)},
	{Name: "render_mermaid", call: renderMermaidTool, hints: rewrites,
		Description: "Renders a Mermaid diagram with mermaid-cli and a headless Chromium, confined like Bash. With output_path the SVG (fonts embedded) or PNG is written there in the workspace; without it a PNG comes back as image content and an SVG as text. Refuses at once, saying how to install them, when mmdc or chromium is missing; a diagram Mermaid cannot parse is an error with its message.",
		InputSchema: schema(`{"type":"object","properties":{
			"source":{"type":"string","description":"The diagram in Mermaid syntax, e.g. graph TD; A-->B"},
			"format":{"type":"string","enum":["svg","png"],"default":"svg","description":"The image format"},
			"output_path":{"type":"string","description":"Where to write the image in the workspace; omit to get it back in the result"}},"required":["source"],"additionalProperties":false}`)},
	{Name: "find_definition", call: findDefinitionTool, hints: readOnly,
		Description: "Finds where a symbol is declared, through the language server: give file_path, line and column of a use, or symbol (Parse, pkg.Name, Type.Method). Returns the file, the declaration's line range and its first lines." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{` + lspWhere + `},"additionalProperties":false}`)},
	{Name: "find_references", call: findReferencesTool, hints: readOnly,
		Description: "Finds every reference to a symbol, through the language server, including calls through an interface or a re-export that Grep misses: give file_path, line and column, or symbol. Returns file:line:col and the line's text, grouped by file, at most head_limit (default 500)." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{` + lspWhere + `,
			"include_declaration":{"type":"boolean","default":false,"description":"Also list the declaration itself"},
			"head_limit":{"type":"integer","minimum":1,"description":"Show at most this many references"}},"additionalProperties":false}`)},
	{Name: "workspace_symbols", call: workspaceSymbolsTool, hints: readOnly,
		Description: "Searches the declarations of the whole project by name (the language server's fuzzy match), for each language the root's project files name (go.mod, tsconfig.json/package.json, pyproject.toml…). Returns kind, name, file:line:col and end line." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{"query":{"type":"string","description":"The name or part of it, e.g. Parse or Server.Start"}},"required":["query"],"additionalProperties":false}`)},
	{Name: "document_symbols", call: documentSymbolsTool, hints: readOnly,
		Description: "Lists the declarations of one file as a tree (kind, name, line:col and end line), through the language server." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{"file_path":{"type":"string","description":"The file to outline"}},"required":["file_path"],"additionalProperties":false}`)},
	{Name: "hover", call: hoverTool, hints: readOnly,
		Description: "Shows the type and doc comment of the identifier at a position, through the language server." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file holding the identifier"},
			"line":{"type":"integer","minimum":1,"description":"1-based line, as Read numbers lines"},
			"column":{"type":"integer","minimum":1,"description":"1-based character column on that line"}},"required":["file_path","line","column"],"additionalProperties":false}`)},
	{Name: "rename_symbol", writes: true, call: renameSymbolTool, hints: changes,
		Description: "Renames a symbol and every reference to it across the project, with the language server's edit: all files written or none, every one through the workspace's path checks. Refuses, writing nothing, when the server reports a conflict or an error (TypeScript and Python: when the renamed code would have new errors, such as a duplicate name), when new_name is not an identifier, or when the edit would touch a file outside the root. Returns a unified diff and the post-edit check; dry_run only shows the diff." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{` + lspWhere + `,
			"new_name":{"type":"string","description":"The new name"},
			"dry_run":{"type":"boolean","default":false,"description":"Show the diff without writing anything"}},"required":["new_name"],"additionalProperties":false}`)},
	{Name: "diagnostics", call: diagnosticsTool, hints: readOnly,
		Description: "The language server's errors, warnings and hints as file:line:col severity message: for one file, or without file_path for the whole project of each language the root's project files name." + lspNote,
		InputSchema: schema(`{"type":"object","properties":{"file_path":{"type":"string","description":"Only this file (default: the whole project)"}},"additionalProperties":false}`)},
}

// The navigation tools' shared arguments: where (file_path, line,
// column) or what (symbol).
const (
	lspWhere = `"file_path":{"type":"string","description":"The file holding the identifier (with line and column), or the file to look for symbol in"},
			"line":{"type":"integer","minimum":1,"description":"1-based line of the identifier, as Read numbers lines"},
			"column":{"type":"integer","minimum":1,"description":"1-based character column of the identifier on that line"},
			"symbol":{"type":"string","description":"Instead of line and column: the declaration's name, bare (Parse) or qualified (pkg.Name, Type.Method), found through the language server's symbols"}`
	lspNote = " Go (gopls), TypeScript/JavaScript (typescript-language-server) and Python (pyright), started on first use and confined like Bash; paths in the answer are relative to the root, and locations outside it (dependencies, the toolchain) are left out."
)

var verifySchema = schema(`{"type":"object","properties":{"timeout":{"type":"integer","minimum":1,"description":"Optional timeout in milliseconds (default: the Bash timeout)"}},"additionalProperties":false}`)

// schema compacts a schema literal; a malformed one is a programmer error.
func schema(s string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("workspace tool schema: " + err.Error())
	}
	out, _ := json.Marshal(v)
	return out
}
