package workspace

import (
	"encoding/json"
)

// tools is the workspace's tool table: names and argument shapes follow
// Claude Code's built-in tools verbatim (PascalCase), the project-native
// tools are snake_case. The schemas are kiln's source, so every binary
// serves them without a recorded manifest.
var tools = []Tool{
	{Name: "Read", call: readTool,
		Description: "Reads a file from the workspace. file_path is absolute inside the workspace root or relative to it. Returns up to 2000 lines from offset (1-based) in cat -n format; lines longer than 2000 characters are cut. Images (png, jpg, gif, webp) come back as image content.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to read"},
			"offset":{"type":"number","description":"The line number to start reading from"},
			"limit":{"type":"number","description":"The number of lines to read"}},"required":["file_path"]}`)},
	{Name: "Write", writes: true, call: writeTool,
		Description: "Writes a file in the workspace, replacing it atomically if it exists and creating parent folders. Go files get gofmt and go vet findings appended.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to write"},
			"content":{"type":"string","description":"The content to write to the file"}},"required":["file_path","content"]}`)},
	{Name: "Edit", writes: true, call: editTool,
		Description: "Replaces exact text in a file. Fails if old_string is not found, or is found more than once unless replace_all is true. Go files get gofmt and go vet findings appended.",
		InputSchema: schema(`{"type":"object","properties":{
			"file_path":{"type":"string","description":"The file to modify"},
			"old_string":{"type":"string","description":"The text to replace"},
			"new_string":{"type":"string","description":"The text to replace it with (must be different from old_string)"},
			"replace_all":{"type":"boolean","default":false,"description":"Replace all occurrences of old_string"}},"required":["file_path","old_string","new_string"]}`)},
	{Name: "Glob", call: globTool,
		Description: "Finds files by glob pattern (** matches any folders, {a,b} alternatives), newest first.",
		InputSchema: schema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The glob pattern to match files against, e.g. **/*.go"},
			"path":{"type":"string","description":"The folder to search in (default: the workspace root)"}},"required":["pattern"]}`)},
	{Name: "Grep", call: grepTool,
		Description: "Searches file contents with a regular expression (RE2 syntax). output_mode files_with_matches (default), content or count; glob or type filter files.",
		InputSchema: schema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The regular expression to search for"},
			"path":{"type":"string","description":"File or folder to search in (default: the workspace root)"},
			"glob":{"type":"string","description":"Glob to filter files, e.g. *.js or *.{ts,tsx}"},
			"type":{"type":"string","description":"File type to search, e.g. go, js, py, rust"},
			"output_mode":{"type":"string","enum":["content","files_with_matches","count"]},
			"-i":{"type":"boolean","description":"Case insensitive search"},
			"-n":{"type":"boolean","description":"Show line numbers (content mode)"},
			"-A":{"type":"number","description":"Lines to show after each match (content mode)"},
			"-B":{"type":"number","description":"Lines to show before each match (content mode)"},
			"-C":{"type":"number","description":"Lines to show before and after each match (content mode)"},
			"head_limit":{"type":"number","description":"Keep only the first N lines or entries"},
			"multiline":{"type":"boolean","description":"Let . match newlines and patterns span lines"}},"required":["pattern"]}`)},
	{Name: "Bash", call: bashTool,
		Description: "Runs a bash command in the workspace root, confined to it: no files outside the root and a private temporary folder, no network unless the workspace allows it, only the configured environment. Output (stdout and stderr) ends with its exit code; at the timeout the whole process group is killed and the exit code is 124.",
		InputSchema: schema(`{"type":"object","properties":{
			"command":{"type":"string","description":"The command to execute"},
			"timeout":{"type":"number","description":"Optional timeout in milliseconds"},
			"description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words"},
			"run_in_background":{"type":"boolean","description":"Run in the background; read its output later with BashOutput"}},"required":["command"]}`)},
	{Name: "BashOutput", call: bashOutputTool,
		Description: "Returns the new output of a background shell since the last read, and whether it is still running.",
		InputSchema: schema(`{"type":"object","properties":{
			"bash_id":{"type":"string","description":"The ID of the background shell"},
			"filter":{"type":"string","description":"Optional regular expression; only matching lines are returned"}},"required":["bash_id"]}`)},
	{Name: "KillShell", call: killShellTool,
		Description: "Kills a background shell and everything it started.",
		InputSchema: schema(`{"type":"object","properties":{
			"shell_id":{"type":"string","description":"The ID of the background shell to kill"}},"required":["shell_id"]}`)},
	{Name: "run_tests", call: verifyTool("run_tests", func(p project) string { return p.tests }),
		Description: "Runs the project's tests, detected from the root: go.mod → go test ./..., package.json → its test script, pyproject.toml → pytest.",
		InputSchema: verifySchema},
	{Name: "run_lint", call: verifyTool("run_lint", func(p project) string { return p.lint }),
		Description: "Runs the project's linters: go.mod → go vet ./... and gofmt -l, package.json → its lint script, pyproject.toml → ruff.",
		InputSchema: verifySchema},
	{Name: "run_typecheck", call: verifyTool("run_typecheck", func(p project) string { return p.typechek }),
		Description: "Type-checks the project: go.mod → go build ./..., package.json → its typecheck script or tsc --noEmit, pyproject.toml → mypy.",
		InputSchema: verifySchema},
	{Name: "snapshot_create", call: snapshotCreateTool,
		Description: "Saves an exact copy of the workspace tree, to go back to with snapshot_restore.",
		InputSchema: schema(`{"type":"object","properties":{"name":{"type":"string","description":"Optional id (lowercase letters, digits, - and _); default: the time"}}}`)},
	{Name: "snapshot_list", call: snapshotListTool,
		Description: "Lists the workspace's snapshots, newest first.",
		InputSchema: schema(`{"type":"object","properties":{}}`)},
	{Name: "snapshot_restore", writes: true, call: snapshotRestoreTool,
		Description: "Replaces the whole workspace tree with a snapshot (files not in the snapshot are deleted).",
		InputSchema: schema(`{"type":"object","properties":{"id":{"type":"string","description":"The snapshot id from snapshot_list"}},"required":["id"]}`)},
}

var verifySchema = schema(`{"type":"object","properties":{"timeout":{"type":"number","description":"Optional timeout in milliseconds (default: the Bash timeout)"}}}`)

// schema compacts a schema literal; a malformed one is a programmer error.
func schema(s string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("workspace tool schema: " + err.Error())
	}
	out, _ := json.Marshal(v)
	return out
}
