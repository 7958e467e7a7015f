package config

import _ "embed"

//go:embed schema/v1.json
var schemaV1 []byte

// Schema returns the JSON Schema of config version 1, for editors and
// `kiln config schema`-style commands. The bytes are a copy.
func Schema() []byte {
	return append([]byte(nil), schemaV1...)
}
