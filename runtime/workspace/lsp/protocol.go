package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Position is a zero-based line and UTF-16 character offset.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a half-open span of a document.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is a span of a document named by its URI.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// Diagnostic is one problem a server reports.
type Diagnostic struct {
	Range    Range  `json:"range"`
	Severity int    `json:"severity"`
	Source   string `json:"source"`
	Message  string `json:"message"`
}

// SeverityName is a diagnostic severity as a word.
func SeverityName(s int) string {
	switch s {
	case 1:
		return "error"
	case 2:
		return "warning"
	case 3:
		return "info"
	case 4:
		return "hint"
	}
	return "error" // LSP: a missing severity is the client's to interpret
}

// Symbol is a named declaration, from workspace/symbol or a flattened
// textDocument/documentSymbol.
type Symbol struct {
	Name      string
	Kind      int
	Container string
	Location  Location
	// Selection is the name's own range when the server gives it
	// (document symbols); else the zero Range.
	Selection Range
	Depth     int // nesting in a document symbol tree
	Detail    string
}

// KindName is an LSP SymbolKind as a word.
func KindName(k int) string {
	names := []string{"", "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor",
		"enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array", "object",
		"key", "null", "enum member", "struct", "event", "operator", "type parameter"}
	if k > 0 && k < len(names) {
		return names[k]
	}
	return "symbol"
}

// TextEdit replaces Range with NewText.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// WorkspaceEdit is a rename's answer reduced to text edits by URI; Other
// names resource operations (create, rename, delete file) the answer
// holds, which kiln does not apply.
type WorkspaceEdit struct {
	Changes map[string][]TextEdit
	Other   []string
}

// URI turns an absolute path into a file URI.
func URI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Path turns a file URI into an absolute path, false for another scheme.
func Path(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

func docID(uri string) map[string]any { return map[string]any{"uri": uri} }

func posParams(uri string, p Position) map[string]any {
	return map[string]any{"textDocument": docID(uri), "position": p}
}

// Initialize performs the handshake for a server rooted at root and
// reports the server's name. processId is null: a server in its own PID
// namespace cannot see the client's process, and typescript-language-server
// exits at once when the process it was told to watch looks gone.
func (c *Conn) Initialize(ctx context.Context, root string, options any) (string, error) {
	caps := map[string]any{
		"general":   map[string]any{"positionEncodings": []string{"utf-16"}},
		"workspace": map[string]any{"workspaceFolders": true, "configuration": true, "symbol": map[string]any{}, "didChangeWatchedFiles": map[string]any{"dynamicRegistration": true}},
		"textDocument": map[string]any{
			"synchronization":    map[string]any{"didSave": true},
			"definition":         map[string]any{"linkSupport": true},
			"references":         map[string]any{},
			"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
			"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
			"rename":             map[string]any{"prepareSupport": true},
			"publishDiagnostics": map[string]any{"relatedInformation": false},
		},
		"window": map[string]any{"workDoneProgress": false},
	}
	params := map[string]any{"processId": nil, "rootUri": URI(root), "rootPath": root, "capabilities": caps,
		"workspaceFolders": []any{map[string]any{"uri": URI(root), "name": filepath.Base(root)}}}
	if options != nil {
		params["initializationOptions"] = options
	}
	var res struct {
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if err := c.Call(ctx, "initialize", params, &res); err != nil {
		return "", err
	}
	return res.ServerInfo.Name, c.Notify("initialized", map[string]any{})
}

// DidOpen opens a document at version 1.
func (c *Conn) DidOpen(uri, languageID, text string) error {
	return c.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": languageID, "version": 1, "text": text}})
}

// DidClose closes a document (the server reads it from disk again).
func (c *Conn) DidClose(uri string) error {
	return c.Notify("textDocument/didClose", map[string]any{"textDocument": docID(uri)})
}

// DidChange replaces an open document's whole text.
func (c *Conn) DidChange(uri string, version int, text string) error {
	return c.Notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": version},
		"contentChanges": []any{map[string]any{"text": text}}})
}

// FileEvent is one file created, changed or deleted on disk.
type FileEvent struct {
	URI  string `json:"uri"`
	Type int    `json:"type"`
}

// FileEvent types.
const (
	FileCreated = 1
	FileChanged = 2
	FileDeleted = 3
)

// FilesChanged tells the server files changed on disk
// (workspace/didChangeWatchedFiles).
func (c *Conn) FilesChanged(ev []FileEvent) error {
	return c.Notify("workspace/didChangeWatchedFiles", map[string]any{"changes": ev})
}

// Definition returns where the symbol at p is declared.
func (c *Conn) Definition(ctx context.Context, uri string, p Position) ([]Location, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "textDocument/definition", posParams(uri, p), &raw); err != nil {
		return nil, err
	}
	return decodeLocations(raw)
}

// decodeLocations reads Location, []Location or []LocationLink.
func decodeLocations(raw json.RawMessage) ([]Location, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if strings.HasPrefix(s, "{") {
		var l Location
		err := json.Unmarshal(raw, &l)
		return []Location{l}, err
	}
	var items []struct {
		Location
		TargetURI            string `json:"targetUri"`
		TargetRange          Range  `json:"targetRange"`
		TargetSelectionRange Range  `json:"targetSelectionRange"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	out := make([]Location, 0, len(items))
	for _, it := range items {
		if it.TargetURI != "" {
			out = append(out, Location{URI: it.TargetURI, Range: it.TargetRange})
			continue
		}
		out = append(out, it.Location)
	}
	return out, nil
}

// References returns every reference to the symbol at p.
func (c *Conn) References(ctx context.Context, uri string, p Position, includeDecl bool) ([]Location, error) {
	params := posParams(uri, p)
	params["context"] = map[string]any{"includeDeclaration": includeDecl}
	var out []Location
	err := c.Call(ctx, "textDocument/references", params, &out)
	return out, err
}

// Hover returns the hover text at p, "" when there is none.
func (c *Conn) Hover(ctx context.Context, uri string, p Position) (string, error) {
	var res *struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := c.Call(ctx, "textDocument/hover", posParams(uri, p), &res); err != nil || res == nil {
		return "", err
	}
	return hoverText(res.Contents), nil
}

// hoverText reads MarkupContent, a MarkedString or a list of them.
func hoverText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var mc struct {
		Kind     string `json:"kind"`
		Language string `json:"language"`
		Value    string `json:"value"`
	}
	if json.Unmarshal(raw, &mc) == nil && (mc.Kind != "" || mc.Language != "") {
		if mc.Language != "" {
			return "```" + mc.Language + "\n" + mc.Value + "\n```"
		}
		return mc.Value
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		parts := make([]string, 0, len(list))
		for _, item := range list {
			if t := hoverText(item); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

// WorkspaceSymbols searches the workspace's symbols.
func (c *Conn) WorkspaceSymbols(ctx context.Context, query string) ([]Symbol, error) {
	var items []struct {
		Name          string          `json:"name"`
		Kind          int             `json:"kind"`
		ContainerName string          `json:"containerName"`
		Location      json.RawMessage `json:"location"`
	}
	if err := c.Call(ctx, "workspace/symbol", map[string]any{"query": query}, &items); err != nil {
		return nil, err
	}
	out := make([]Symbol, 0, len(items))
	for _, it := range items {
		var loc Location
		if json.Unmarshal(it.Location, &loc) != nil || loc.URI == "" {
			continue // a WorkspaceSymbol without a range: nothing to show
		}
		out = append(out, Symbol{Name: it.Name, Kind: it.Kind, Container: it.ContainerName, Location: loc})
	}
	return out, nil
}

// DocumentSymbols returns a document's symbols, flattened in document
// order with their depth.
func (c *Conn) DocumentSymbols(ctx context.Context, uri string) ([]Symbol, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": docID(uri)}, &raw); err != nil {
		return nil, err
	}
	type docSym struct {
		Name           string          `json:"name"`
		Detail         string          `json:"detail"`
		Kind           int             `json:"kind"`
		Range          *Range          `json:"range"`
		SelectionRange Range           `json:"selectionRange"`
		Children       json.RawMessage `json:"children"`
		Location       *Location       `json:"location"`
		ContainerName  string          `json:"containerName"`
	}
	var out []Symbol
	var walk func(raw json.RawMessage, depth int, container string) error
	walk = func(raw json.RawMessage, depth int, container string) error {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		var items []docSym
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		for _, it := range items {
			if it.Location != nil { // SymbolInformation
				out = append(out, Symbol{Name: it.Name, Kind: it.Kind, Container: it.ContainerName, Location: *it.Location})
				continue
			}
			if it.Range == nil {
				continue
			}
			out = append(out, Symbol{Name: it.Name, Kind: it.Kind, Container: container, Location: Location{URI: uri, Range: *it.Range},
				Selection: it.SelectionRange, Depth: depth, Detail: it.Detail})
			if err := walk(it.Children, depth+1, it.Name); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(raw, 0, "")
}

// PrepareRename asks whether the symbol at p can be renamed; servers
// without prepareRename say yes.
func (c *Conn) PrepareRename(ctx context.Context, uri string, p Position) error {
	var raw json.RawMessage
	err := c.Call(ctx, "textDocument/prepareRename", posParams(uri, p), &raw)
	if re, ok := err.(*ResponseError); ok && re.Code == -32601 {
		return nil // method not found
	}
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(raw)); s == "null" || s == "" {
		return fmt.Errorf("there is no symbol that can be renamed at this position")
	}
	return nil
}

// Rename asks for the edits that rename the symbol at p to newName.
func (c *Conn) Rename(ctx context.Context, uri string, p Position, newName string) (*WorkspaceEdit, error) {
	params := posParams(uri, p)
	params["newName"] = newName
	var raw struct {
		Changes         map[string][]TextEdit `json:"changes"`
		DocumentChanges []json.RawMessage     `json:"documentChanges"`
	}
	if err := c.Call(ctx, "textDocument/rename", params, &raw); err != nil {
		return nil, err
	}
	we := &WorkspaceEdit{Changes: map[string][]TextEdit{}}
	for u, edits := range raw.Changes {
		we.Changes[u] = append(we.Changes[u], edits...)
	}
	for _, dc := range raw.DocumentChanges {
		var d struct {
			Kind         string `json:"kind"`
			URI          string `json:"uri"`
			OldURI       string `json:"oldUri"`
			NewURI       string `json:"newUri"`
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
			Edits []TextEdit `json:"edits"`
		}
		if err := json.Unmarshal(dc, &d); err != nil {
			return nil, fmt.Errorf("rename: decode the edit: %w", err)
		}
		if d.Kind != "" {
			we.Other = append(we.Other, d.Kind+" "+d.URI+d.OldURI+" "+d.NewURI)
			continue
		}
		we.Changes[d.TextDocument.URI] = append(we.Changes[d.TextDocument.URI], d.Edits...)
	}
	return we, nil
}
