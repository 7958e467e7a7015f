// Package gen holds what kiln-gen's two phases share: the generated→runtime
// contract. Every runtime symbol that generated code names is listed here,
// so a rename in runtime/ breaks one file in gen/ instead of silently
// producing code that no longer compiles. gen/record talks to live backends
// and writes manifests/; gen/emit turns manifests into generated/ offline.
package gen

import "github.com/dave/jennifer/jen"

// Import paths generated code may use besides the standard library.
const (
	// ModulePath is the module generated code lives in.
	ModulePath = "github.com/kilnmcp/kiln"
	// GeneratedPkg is the default import path of the emitted tree.
	GeneratedPkg = ModulePath + "/generated"
	// ManifestPkg defines manifest.Manifest, the recorded shape of a backend.
	ManifestPkg = ModulePath + "/runtime/manifest"
	// RegistryPkg defines registry.Registry, which Register functions fill.
	RegistryPkg = ModulePath + "/runtime/registry"
	// ToolcallPkg defines the Caller and Result every typed stub goes through.
	ToolcallPkg = ModulePath + "/runtime/toolcall"
)

// Standard-library import paths generated code uses.
const (
	// ContextPkg is imported by every typed stub.
	ContextPkg = "context"
	// JSONPkg supplies json.RawMessage for schemas and untyped values.
	JSONPkg = "encoding/json"
	// EmbedPkg is imported for its side effect by files using //go:embed.
	EmbedPkg = "embed"
)

// Manifest is the type manifest.Manifest.
func Manifest() *jen.Statement { return jen.Qual(ManifestPkg, "Manifest") }

// ServerInfo is the type manifest.ServerInfo.
func ServerInfo() *jen.Statement { return jen.Qual(ManifestPkg, "ServerInfo") }

// Tool is the type manifest.Tool.
func Tool() *jen.Statement { return jen.Qual(ManifestPkg, "Tool") }

// Resource is the type manifest.Resource.
func Resource() *jen.Statement { return jen.Qual(ManifestPkg, "Resource") }

// ResourceTemplate is the type manifest.ResourceTemplate.
func ResourceTemplate() *jen.Statement { return jen.Qual(ManifestPkg, "ResourceTemplate") }

// Prompt is the type manifest.Prompt.
func Prompt() *jen.Statement { return jen.Qual(ManifestPkg, "Prompt") }

// PromptArgument is the type manifest.PromptArgument.
func PromptArgument() *jen.Statement { return jen.Qual(ManifestPkg, "PromptArgument") }

// Registry is the type registry.Registry.
func Registry() *jen.Statement { return jen.Qual(RegistryPkg, "Registry") }

// RegistryAdd is the method name of (*registry.Registry).Add(m, compiled).
const RegistryAdd = "Add"

// Caller is the interface toolcall.Caller.
func Caller() *jen.Statement { return jen.Qual(ToolcallPkg, "Caller") }

// Result is the type toolcall.Result.
func Result() *jen.Statement { return jen.Qual(ToolcallPkg, "Result") }

// Call is the generic function toolcall.Call(ctx, c, backend, tool, args).
func Call() *jen.Statement { return jen.Qual(ToolcallPkg, "Call") }

// Context is the type context.Context.
func Context() *jen.Statement { return jen.Qual(ContextPkg, "Context") }

// RawMessage is the type json.RawMessage.
func RawMessage() *jen.Statement { return jen.Qual(JSONPkg, "RawMessage") }

// JSON names a function of encoding/json, such as Marshal.
func JSON(name string) *jen.Statement { return jen.Qual(JSONPkg, name) }

// Int64 is the function manifest.Int64, which generated manifests call for
// resource sizes.
func Int64() *jen.Statement { return jen.Qual(ManifestPkg, "Int64") }
