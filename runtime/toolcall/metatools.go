package toolcall

import "slices"

// The meta-tools: kiln's own tools, named here once. They keep the anchor
// gateway's names, so agents and prompts written for it work unchanged.
// The server lists them, the config refuses them as backend names and the
// sandbox explains that they cannot be called from a program.
const (
	MetaSearch     = "search_tools"
	MetaList       = "list_tools_meta"
	MetaInfo       = "tool_info"
	MetaKeys       = "get_required_keys_for_tool"
	MetaChain      = "call_tool_chain"
	MetaRegister   = "register_manual"
	MetaDeregister = "deregister_manual"
)

// metaToolNames is the order tools/list shows them in.
var metaToolNames = []string{MetaSearch, MetaList, MetaInfo, MetaKeys, MetaChain, MetaRegister, MetaDeregister}

// MetaToolNames returns the meta-tools' names in listing order; the slice
// is a copy.
func MetaToolNames() []string { return slices.Clone(metaToolNames) }

// IsMetaTool reports whether name is a meta-tool's.
func IsMetaTool(name string) bool { return slices.Contains(metaToolNames, name) }
