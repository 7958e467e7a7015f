package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ManualLabel names a runtime registration in problems, where a file name
// would go.
const ManualLabel = "register_manual"

// ParseBackend reads one backend definition given at run time
// (register_manual's argument) in the shape of a backends entry of
// kiln.yaml, with base's gateway defaults. It reports problems as Load
// does, keyed by path, without line numbers (the definition is not a file).
//
// ${VAR} references are refused rather than expanded: a client that could
// register `headers: {X: ${AWS_SECRET_ACCESS_KEY}}` toward its own server
// would read kiln's environment.
func ParseBackend(name string, def json.RawMessage, base *Config) (Backend, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(def, &fields); err != nil || fields == nil {
		return Backend{}, &Error{Problems: []Problem{{File: ManualLabel, Key: keyPath("backends", name),
			Message: "want an object such as {\"transport\": \"http\", \"url\": \"http://127.0.0.1:3000/mcp\"}"}}}
	}
	if strings.Contains(string(def), "${") {
		return Backend{}, &Error{Problems: []Problem{{File: ManualLabel, Key: keyPath("backends", name),
			Message: "${VAR} references are not expanded for backends registered at run time; write the value itself, or declare the backend in kiln.yaml"}}}
	}
	// The base's call timeout is the backend's default timeout, as for a
	// backend of kiln.yaml; the builder applies it.
	gw := map[string]string{}
	if base.Gateway.CallTimeout > 0 {
		gw["call_timeout"] = base.Gateway.CallTimeout.String()
	}
	doc, err := json.Marshal(map[string]any{"version": 1, "gateway": gw, "backends": map[string]json.RawMessage{name: def}})
	if err != nil {
		return Backend{}, fmt.Errorf("register_manual: %w", err)
	}
	none := func(string) (string, bool) { return "", false }
	cfg, err := LoadBytesWith(doc, ManualLabel, base.Dir, LoadOptions{Getenv: none, NoDotEnv: true})
	var cerr *Error
	if errors.As(err, &cerr) {
		for i := range cerr.Problems {
			cerr.Problems[i].Line = 0
		}
		return Backend{}, cerr
	}
	if err != nil {
		return Backend{}, err
	}
	if len(cfg.Backends) != 1 {
		return Backend{}, &Error{Problems: []Problem{{File: ManualLabel, Key: keyPath("backends", name), Message: "no backend definition found"}}}
	}
	b := cfg.Backends[0]
	if b.Transport == TransportWorkspace {
		// A client must not open kiln's file and shell tools on a folder
		// of its choosing.
		return Backend{}, &Error{Problems: []Problem{{File: ManualLabel, Key: keyPath("backends", name) + ".transport",
			Message: "workspace backends can only be declared in kiln.yaml; register an http or sse backend instead"}}}
	}
	return b, nil
}
