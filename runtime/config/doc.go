// Package config loads kiln.yaml: the backends kiln fronts (stdio
// subprocesses, streamable HTTP and legacy SSE servers) and the gateway's own
// settings.
//
// Loading runs in three stages, each reporting every problem it finds with
// the file, line, key path and a fix:
//
//  1. parse: the YAML node tree is walked against the version 1 key set. The
//     version is read first and an unknown one stops loading, since the rest
//     of the file may follow another schema. The node tree, not a decoded
//     map, is the source of truth for structure because maps silently drop
//     duplicate keys and viper lowercases keys, while env and header names
//     must keep their case (GITHUB_TOKEN is not github_token).
//  2. validate: scalar settings are layered by viper (defaults < file <
//     KILN_… environment overrides), then every string is expanded
//     (${VAR}, ${VAR:-default}, $$ for a literal $) and checked against its
//     key and the backend's transport.
//  3. build: checked values become typed fields, relative paths resolve
//     against the config's folder and backends are sorted by name. The
//     Config is returned only if no stage found a problem; otherwise one
//     *Error lists them all.
//
// Variables come from the process environment, then from a .env file beside
// the config; the process environment is never modified. A ${VAR} that is
// unset expands to "" and is reported through Backend.Vars rather than as an
// error, so kiln can tell a model which keys a tool needs. ${KILN_STATE_DIR}
// is kiln's own: the absolute state folder, for backends' settings only.
//
// Environment overrides are named after the key path, upper-cased with '.'
// and '-' turned into '_': KILN_GATEWAY_CALL_TIMEOUT=10s,
// KILN_GATEWAY_SANDBOX_MEMORY=100MiB, KILN_BACKENDS_MY_SERVER_ENABLED=false.
// They apply to every scalar key of the gateway and its sections and to a
// declared backend's scalar keys: exactly the single-value keys table.go
// declares (lists and maps such as args, env and headers cannot be
// overridden). An empty value is ignored, as viper does.
//
// Every key is declared once, in keyTable (table.go): path, kind, default,
// bounds, description, the transports that use it and what a reload does
// with it. The key sets, suggestions, bounds and defaults the loader uses
// are derived from it, and so are schema/v1.json, docs/reference/config.md
// (its reference and the defaults in its annotated kiln.yaml) (example.tmpl;
// `make config-docs`, checked by TestGeneratedDocs).
//
// Sandbox limits and output thresholds left out stay zero, which the
// sandbox and the output pipeline read as "use the default": the sandbox
// takes it from SandboxDefaults (keyTable), the pipeline from its own
// constants, which keyTable quotes.
//
// A backend's transport may be omitted only when it sets command, in which
// case it is stdio; an HTTP backend must say http or sse because the two
// speak different protocols at the same kind of URL.
//
// schema/v1.json is the JSON Schema of version 1, for editors and CI,
// generated from keyTable.
package config
