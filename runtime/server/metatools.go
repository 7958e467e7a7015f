package server

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// The meta-tools' names are toolcall's (one table the config and the
// sandbox ask too); their parameter names keep the anchor gateway's, so
// agents and prompts written for it work unchanged.
const (
	toolSearch     = toolcall.MetaSearch
	toolList       = toolcall.MetaList
	toolInfo       = toolcall.MetaInfo
	toolKeys       = toolcall.MetaKeys
	toolChain      = toolcall.MetaChain
	toolRegister   = toolcall.MetaRegister
	toolDeregister = toolcall.MetaDeregister
)

// Limits advertised in the schemas; the handlers rely on validation to
// enforce them. The schemas also bound every string argument that an
// error may quote (task_description 1000 characters, a step 300, tool_name 300, cursor,
// manual_name and a registered backend's name 100): a megabyte query must not come back whole, nor cost a fuzzy match
// against every tool name.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	defaultPageSize    = 50
	maxPageSize        = 200
)

type metaTool struct {
	name, description, schema string
}

// withLimits fills the limits a schema quotes ({timeout_ms} and the like)
// from this kiln's config, so the numbers a model reads are the ones that
// apply and each has one owner: the config's declarations.
func (mt metaTool) withLimits(l guideLimits) metaTool {
	mt.schema = strings.NewReplacer(
		"{timeout_ms}", strconv.FormatInt(l.timeout.Milliseconds(), 10),
		"{max_timeout_ms}", strconv.FormatInt(l.maxTimeout.Milliseconds(), 10),
		"{max_output}", strconv.Itoa(l.maxOutput),
		"{trim_at}", strconv.Itoa(l.trimAt),
	).Replace(mt.schema)
	return mt
}

var metaTools = []metaTool{
	{toolSearch,
		"Find backend tools for a task. Describe what you want to do in plain words; returns the best matching tools " +
			"(backend.tool, one-line description, a call example). Start here, then use tool_info for a tool's full schema " +
			"and call_tool_chain to run it. For a task of several steps, also pass steps (one short phrase per step): " +
			"the answer then has the best tools for every step.",
		`{"type":"object","properties":{
"task_description":{"type":"string","minLength":1,"maxLength":1000,"description":"What you want to do in a sentence or two (at most 1000 characters), e.g. \"read a file\" or \"search the web for news\"."},
"steps":{"type":"array","maxItems":10,"items":{"type":"string","minLength":1,"maxLength":300},"description":"For a multi-step task: its steps, one short phrase each (at most 10), e.g. [\"find the repository\", \"open an issue\"]. Each step is searched and the results interleaved, so every step's best tool comes early."},
"limit":{"type":"integer","minimum":1,"maximum":50,"default":10,"description":"How many tools to return (1-50)."},
"brief":{"type":"boolean","default":true,"description":"true: first sentence of each description and a call example; false: full descriptions and parameter lists."}},
"required":["task_description"],"additionalProperties":false}`},
	{toolList,
		"List every backend tool by name (backend.tool) with a one-line description, one page at a time. " +
			"Pass the returned next_cursor to get the next page.",
		`{"type":"object","properties":{
"cursor":{"type":"string","maxLength":100,"description":"next_cursor from the previous page; omit for the first page."},
"page_size":{"type":"integer","minimum":1,"maximum":200,"default":50,"description":"Tools per page (1-200)."}},
"additionalProperties":false}`},
	{toolInfo,
		"Describe one backend tool. detail \"brief\" gives its parameters and a call example; \"full\" gives the exact " +
			"input schema the backend published (and output schema and annotations when it has them).",
		`{"type":"object","properties":{
"tool_name":{"type":"string","minLength":1,"maxLength":300,"description":"backend.tool, or a bare tool name when only one backend has it."},
"detail":{"type":"string","enum":["brief","full"],"default":"brief","description":"brief or full."}},
"required":["tool_name"],"additionalProperties":false}`},
	{toolKeys,
		"List the environment variables the tool's backend needs (from kiln's config) and whether each is set. " +
			"Values are never shown.",
		`{"type":"object","properties":{
"tool_name":{"type":"string","minLength":1,"maxLength":300,"description":"backend.tool, or a bare tool name when only one backend has it."}},
"required":["tool_name"],"additionalProperties":false}`},
	{toolChain,
		"Run backend tools. code is either a JSON call {\"tool\": \"backend.tool\", \"arguments\": {...}} or TypeScript " +
			"that calls tools as backend.tool({...}) (async; await them) and returns a value. Large outputs are shrunk: " +
			"pass intent to keep only the parts you need.",
		`{"type":"object","properties":{
"code":{"type":"string","minLength":1,"description":"A JSON tool call or a TypeScript program; tools are async functions backend.tool(args)."},
"timeout":{"type":"integer","minimum":1,"description":"Time limit for the whole run in milliseconds (default {timeout_ms}). Values above {max_timeout_ms} (this kiln's gateway.sandbox.max_timeout) run with that limit, and the result says so."},
"max_output_size":{"type":"integer","minimum":100,"description":"Maximum size of the returned text in bytes of UTF-8, never cutting a character (default {max_output}). Without it, outputs over {trim_at} bytes are shortened; with it, output up to this size comes back whole unless intent is given."},
"intent":{"type":"string","description":"What you are looking for in a large output; only matching paragraphs are kept."}},
"required":["code"],"additionalProperties":false}`},
	{toolRegister,
		"Add a backend MCP server at run time (not compiled into kiln); its tools become searchable and callable at once. " +
			"manual_call_template has the shape of a backend in kiln.yaml plus its name. HTTP backends are allowed; " +
			"stdio commands only when kiln's operator allowed them.",
		`{"type":"object","properties":{
"manual_call_template":{"type":"object","description":"The backend: {name, transport: http|sse|stdio, url, headers, command, args, env, timeout, max_concurrent}.",
"properties":{
"name":{"type":"string","pattern":"^[a-z][a-z0-9_-]*$","maxLength":100,"description":"Backend name; its tools are called name.tool."},
"transport":{"type":"string","enum":["http","sse","stdio"]},
"url":{"type":"string","description":"http, sse: the server's address."},
"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"http, sse: headers sent with every request."},
"command":{"type":"string","description":"stdio: the program to run."},
"args":{"type":"array","items":{"type":"string"}},
"env":{"type":"object","additionalProperties":{"type":"string"}},
"timeout":{"type":"string","description":"Per-call timeout such as 30s."},
"max_concurrent":{"type":"integer","minimum":1}},
"required":["name"]}},
"required":["manual_call_template"],"additionalProperties":false}`},
	{toolDeregister,
		"Remove a backend added with register_manual.",
		`{"type":"object","properties":{
"manual_name":{"type":"string","minLength":1,"maxLength":100,"description":"The name given to register_manual."}},
"required":["manual_name"],"additionalProperties":false}`},
}

// MetaToolSpec is a meta-tool as a client lists it: docs/reference/tools.md
// is rendered from these, so the reference is the listing, not a copy.
type MetaToolSpec struct {
	Name, Description string
	InputSchema       json.RawMessage
}

// MetaTools returns the meta-tools in listing order with the limits their
// schemas quote read from cfg (the defaults when cfg is nil).
func MetaTools(cfg *config.Config) []MetaToolSpec {
	l := limitsOf(cfg)
	out := make([]MetaToolSpec, 0, len(metaTools))
	for _, mt := range metaTools {
		mt = mt.withLimits(l)
		out = append(out, MetaToolSpec{Name: mt.name, Description: mt.description, InputSchema: json.RawMessage(mt.schema)})
	}
	return out
}
