// Package workspace serves kiln's own file and shell tools over one folder,
// the root, with Claude Code's tool names and argument shapes (Read, Write,
// Edit, Glob, Grep, Bash, BashOutput, KillShell) plus verification and
// snapshot tools.
//
// Nothing a tool does may reach outside the root. File tools send every
// path through one resolver (Root.Resolve) and open files with openat2 and
// RESOLVE_BENEATH, so a symlink swapped in between the check and the open
// cannot escape. Bash runs in a child of kiln re-executed as
// "kiln workspace-exec", which applies Landlock (read-write root and a
// private temporary folder, read-only system folders, nothing else) and,
// without network: true, an empty network namespace before it execs bash.
//
// The navigation tools (find_definition, find_references, rename_symbol,
// …) ask a language server per (workspace, language), started on first
// use under the same confinement as Bash, through the LSP client in
// package lsp (lspserver.go).
//
// Lifecycle: Open → Tools / Call (concurrently) → Close, which stops the
// language servers and kills every shell still running.
package workspace
