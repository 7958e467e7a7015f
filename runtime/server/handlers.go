package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/manifest"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// jsonResult renders v as indented JSON text: the meta-tools' answers are
// read by models, which parse JSON reliably.
func jsonResult(v any) *toolcall.Result {
	raw, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return toolcall.Errorf("internal error: encode result: %v", err)
	}
	return toolcall.Text(string(raw))
}

type searchArgs struct {
	TaskDescription string   `json:"task_description"`
	Steps           []string `json:"steps"`
	Limit           *int     `json:"limit"`
	Brief           *bool    `json:"brief"`
}

type searchResult struct {
	Tool        string   `json:"tool"`
	Backend     string   `json:"backend"`
	Description string   `json:"description"`
	Example     string   `json:"example"`
	Parameters  []param  `json:"parameters,omitempty"`
	MatchedBy   string   `json:"matched_by,omitempty"`
	TryAlso     []string `json:"try_also,omitempty"`
}

type param struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Required    bool     `json:"required,omitempty"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

func (s *Server) searchTools(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a searchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("search_tools: %v", err)
	}
	limit := defaultSearchLimit
	if a.Limit != nil {
		limit = min(*a.Limit, maxSearchLimit)
	}
	brief := a.Brief == nil || *a.Brief
	v := s.view()
	hits := s.search(v, a.TaskDescription, a.Steps, limit, s.boostFor(ctx))
	if brief {
		return s.briefAnswer(ctx, v, a.TaskDescription, hits)
	}
	ref := refIn(v)
	out := make([]searchResult, 0, len(hits))
	for _, h := range hits {
		t, err := s.resolveVisible(ctx, h.ID)
		if err != nil {
			continue // removed since the index was built, or not for this identity
		}
		out = append(out, searchResult{Tool: t.ID(), Backend: t.Backend, Example: t.Example(ref), MatchedBy: h.Tier.String(),
			TryAlso: tryAlso(v, t.Backend, a.TaskDescription, 3), Description: t.Description, Parameters: params(t)})
	}
	if len(out) == 0 {
		return s.noMatch(ctx, a.TaskDescription)
	}
	return jsonResult(map[string]any{"results": out})
}

// briefHit is one brief search result: what a model needs to pick a tool
// and call it, nothing it can derive (the backend is the name's prefix).
type briefHit struct {
	Tool        string `json:"tool"`
	Description string `json:"description,omitempty"`
	Example     string `json:"example"`
	MatchedBy   string `json:"matched_by,omitempty"` // only when the hits' tiers differ
}

// briefAnswer is compact JSON: a brief answer is read on every search, so
// what is the same for every hit is said once. try_also holds, per backend
// among the hits, distinctive words the query lacked.
type briefAnswer struct {
	Results   []briefHit          `json:"results"`
	MatchedBy string              `json:"matched_by,omitempty"`
	TryAlso   map[string][]string `json:"try_also,omitempty"`
}

// briefDescriptionBytes bounds a brief hit's one-line description.
const briefDescriptionBytes = 120

func (s *Server) briefAnswer(ctx context.Context, v *catalog.View, query string, hits []search.Hit) *toolcall.Result {
	ref := refIn(v)
	ans := briefAnswer{Results: make([]briefHit, 0, len(hits))}
	tiers := map[string]bool{}
	for _, h := range hits {
		t, err := s.resolveVisible(ctx, h.ID)
		if err != nil {
			continue // removed since the index was built, or not for this identity
		}
		tier := h.Tier.String()
		tiers[tier] = true
		ans.Results = append(ans.Results, briefHit{Tool: t.ID(), Description: FirstSentence(t.Description, briefDescriptionBytes),
			Example: t.Example(ref), MatchedBy: tier})
		if _, done := ans.TryAlso[t.Backend]; !done {
			if ans.TryAlso == nil {
				ans.TryAlso = map[string][]string{}
			}
			ans.TryAlso[t.Backend] = tryAlso(v, t.Backend, query, 3)
		}
	}
	if len(ans.Results) == 0 {
		return s.noMatch(ctx, query)
	}
	if len(tiers) == 1 {
		for i := range ans.Results {
			ans.MatchedBy, ans.Results[i].MatchedBy = ans.Results[i].MatchedBy, ""
		}
	}
	for b, words := range ans.TryAlso {
		if len(words) == 0 {
			delete(ans.TryAlso, b)
		}
	}
	raw, err := json.Marshal(ans)
	if err != nil {
		return toolcall.Errorf("internal error: encode result: %v", err)
	}
	return toolcall.Text(string(raw))
}

func (s *Server) noMatch(ctx context.Context, query string) *toolcall.Result {
	return toolcall.Text(fmt.Sprintf("No tool matches %q. Try other words (what the tool does, not its name), or list_tools_meta to browse all %d tools.",
		cut(query, maxQuoted), len(s.visibleTools(ctx))))
}

func params(t *registry.Tool) []param {
	var out []param
	for _, p := range t.Params() {
		out = append(out, param{Name: p.Name, Type: p.Type, Required: p.Required, Description: p.Description, Enum: p.Enum})
	}
	return out
}

// ref names a tool as a sandbox script does, in the catalog as it stands.
func (s *Server) ref(backend, tool string) string { return refIn(s.view())(backend, tool) }

type listArgs struct {
	Cursor   string `json:"cursor"`
	PageSize *int   `json:"page_size"`
}

// Cursors are opaque to clients; inside they are an offset into the sorted
// tool list, so a page boundary stays stable while the registry does.
func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil && len(b) >= 3 && string(b[:2]) == "o:" {
		if n, err := strconv.Atoi(string(b[2:])); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("invalid cursor %q: pass next_cursor exactly as returned, or omit it for the first page", cut(c, maxQuoted))
}

func (s *Server) listToolsMeta(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a listArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("list_tools_meta: %v", err)
	}
	size := defaultPageSize
	if a.PageSize != nil {
		size = min(*a.PageSize, maxPageSize)
	}
	offset := 0
	if a.Cursor != "" {
		var err error
		if offset, err = decodeCursor(a.Cursor); err != nil {
			return toolcall.Errorf("list_tools_meta: %v", err)
		}
	}
	tools := s.visibleTools(ctx)
	type entry struct {
		Tool        string `json:"tool"`
		Description string `json:"description"`
	}
	page := make([]entry, 0, size)
	end := min(offset+size, len(tools))
	for _, t := range tools[min(offset, len(tools)):end] {
		page = append(page, entry{t.ID(), FirstSentence(t.Description, 120)})
	}
	out := map[string]any{"tools": page, "total": len(tools)}
	if end < len(tools) {
		out["next_cursor"] = encodeCursor(end)
	}
	return jsonResult(out)
}

type infoArgs struct {
	ToolName string `json:"tool_name"`
	Detail   string `json:"detail"`
}

// fullTool is everything kiln knows of a tool: tool_info's "full" detail
// and the base of kiln://tool/{tool_name}.
func (s *Server) fullTool(t *registry.Tool) map[string]any {
	out := map[string]any{
		"tool":         t.ID(),
		"backend":      t.Backend,
		"description":  t.Description,
		"input_schema": t.InputSchema,
		"example":      t.Example(s.ref),
	}
	if t.Title != "" {
		out["title"] = t.Title
	}
	if len(t.OutputSchema) > 0 {
		out["output_schema"] = t.OutputSchema
	}
	if len(t.Annotations) > 0 {
		out["annotations"] = t.Annotations
	}
	if len(t.Execution) > 0 {
		out["execution"] = t.Execution
	}
	return out
}

func (s *Server) toolInfo(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a infoArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("tool_info: %v", err)
	}
	t, err := s.resolveVisible(ctx, a.ToolName)
	if err != nil {
		return toolcall.Errorf("tool_info: %v", err)
	}
	if a.Detail == "full" {
		return jsonResult(s.fullTool(t))
	}
	return jsonResult(map[string]any{
		"tool":        t.ID(),
		"backend":     t.Backend,
		"description": FirstSentence(t.Description, 300),
		"parameters":  params(t),
		"example":     t.Example(s.ref),
	})
}

func (s *Server) requiredKeys(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a infoArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("get_required_keys_for_tool: %v", err)
	}
	t, err := s.resolveVisible(ctx, a.ToolName)
	if err != nil {
		return toolcall.Errorf("get_required_keys_for_tool: %v", err)
	}
	b, ok := s.opts.Config.Backend(t.Backend)
	if !ok {
		return toolcall.Errorf("get_required_keys_for_tool: backend %q of %s is not declared in the config, so kiln cannot start it; add backends.%s to %s",
			t.Backend, t.ID(), t.Backend, s.opts.Config.EditHint())
	}
	type key struct {
		Name       string `json:"name"`
		Set        bool   `json:"set"`
		HasDefault bool   `json:"has_default,omitempty"`
		UsedIn     string `json:"used_in"`
	}
	keys := []key{}
	ready := true
	for _, v := range b.Vars {
		keys = append(keys, key{Name: v.Name, Set: v.Set, HasDefault: v.HasDefault, UsedIn: v.Key})
		if !v.Set && !v.HasDefault {
			ready = false
		}
	}
	out := map[string]any{"tool": t.ID(), "backend": t.Backend, "keys": keys, "all_required_set": ready}
	if !ready {
		out["hint"] = "Set the missing variables in the environment kiln runs in (or in " + filepath.Join(s.opts.Config.Dir, ".env") + ") and restart kiln."
	}
	return jsonResult(out)
}

type chainArgs struct {
	Code          string `json:"code"`
	Timeout       *int64 `json:"timeout"`
	MaxOutputSize *int   `json:"max_output_size"`
	Intent        string `json:"intent"`
}

func (s *Server) callToolChain(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	a, err := decodeChainArgs(raw)
	if err != nil {
		return toolcall.Errorf("call_tool_chain: %v", err)
	}
	req := chain.Request{Code: a.Code, Intent: a.Intent}
	if a.Timeout != nil {
		req.Timeout = time.Duration(*a.Timeout) * time.Millisecond
	}
	if a.MaxOutputSize != nil {
		req.MaxOutputSize = *a.MaxOutputSize
	}
	return s.opts.Chain.Run(ctx, req)
}

// decodeChainArgs reads call_tool_chain's arguments, which the schema has
// checked, by a scan: the code string is the only member to decode. Any
// member it does not read as encoding/json would (null, a non-integer
// number, an escaped or unknown name) sends the whole to the decoder.
func decodeChainArgs(raw json.RawMessage) (chainArgs, error) {
	if text := strings.TrimSpace(string(raw)); len(text) > 0 && text[0] == '{' && jsontext.Valid(raw) {
		var a chainArgs
		ok := true
		for k, v := range jsontext.Members(text) {
			switch k {
			case `"code"`, `"intent"`:
				if ok = ok && v[0] == '"'; ok {
					if k == `"code"` {
						a.Code = jsontext.DecodeString(v)
					} else {
						a.Intent = jsontext.DecodeString(v)
					}
				}
			case `"timeout"`:
				n, err := strconv.ParseInt(v, 10, 64)
				a.Timeout, ok = &n, ok && err == nil
			case `"max_output_size"`:
				n, err := strconv.Atoi(v)
				a.MaxOutputSize, ok = &n, ok && err == nil
			default:
				ok = false
			}
		}
		if ok {
			return a, nil
		}
	}
	var a chainArgs
	err := json.Unmarshal(raw, &a)
	return a, err
}

type registerArgs struct {
	Template json.RawMessage `json:"manual_call_template"`
}

func (s *Server) registerManual(ctx context.Context, raw json.RawMessage) *toolcall.Result {
	if s.opts.Registrar == nil {
		return toolcall.Errorf("register_manual: this kiln does not accept runtime registrations")
	}
	var a registerArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("register_manual: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(a.Template, &fields); err != nil {
		return toolcall.Errorf("register_manual: manual_call_template: %v", err)
	}
	var name string
	_ = json.Unmarshal(fields["name"], &name) // the schema made it a string
	delete(fields, "name")
	def, _ := json.Marshal(fields)
	m, err := s.opts.Registrar.Register(ctx, name, def)
	if err != nil {
		return toolcall.Errorf("register_manual: %v", err)
	}
	tools := make([]string, 0, len(m.Tools))
	for _, t := range m.Tools {
		tools = append(tools, name+"."+t.Name)
	}
	out := map[string]any{
		"registered": name,
		"server":     m.Server.Name + " " + m.Server.Version,
		"tools":      tools,
		"next":       fmt.Sprintf("search_tools finds these tools now; call them with call_tool_chain as %s.<tool>({...}). deregister_manual with manual_name %q removes the backend.", s.bridgeName(name, m.Tools), name),
	}
	if len(tools) > 0 {
		t := registry.Tool{Tool: m.Tools[0], Backend: name}
		out["example"] = t.Example(s.ref)
	}
	return jsonResult(out)
}

// bridgeName is how TypeScript names a backend: its identifier in the
// sandbox bridge, which differs from the name for names such as my-server.
func (s *Server) bridgeName(backend string, tools []manifest.Tool) string {
	if len(tools) == 0 {
		return backend
	}
	obj, _, _ := strings.Cut(s.ref(backend, tools[0].Name), ".")
	return obj
}

type deregisterArgs struct {
	Name string `json:"manual_name"`
}

func (s *Server) deregisterManual(_ context.Context, raw json.RawMessage) *toolcall.Result {
	if s.opts.Registrar == nil {
		return toolcall.Errorf("deregister_manual: this kiln does not accept runtime registrations")
	}
	var a deregisterArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolcall.Errorf("deregister_manual: %v", err)
	}
	if err := s.opts.Registrar.Deregister(a.Name); err != nil {
		return toolcall.Errorf("deregister_manual: %v", err)
	}
	s.Forget(a.Name)
	return jsonResult(map[string]any{"deregistered": a.Name})
}
