// Package tooldocs renders docs/reference/tools.md: every meta-tool and
// every workspace tool with its description, parameters and hints, read
// from the same tables the server lists (server.MetaTools,
// workspace.Listed), so the page cannot say what the wire does not.
// `make docs` writes it (internal/docgen); TestReferenceFresh fails when
// the committed page differs.
package tooldocs
