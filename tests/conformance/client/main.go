// Command client is the executable the MCP conformance suite's client mode
// runs (`conformance client --command BIN`): the suite starts a scenario
// server, runs BIN with its URL as the last argument and the scenario name
// in MCP_CONFORMANCE_SCENARIO, and judges what reaches the server.
//
// It connects to that URL the way kiln connects to an HTTP backend: through
// runtime/backend (the connection code kiln-gen record and kiln serve share)
// and, for auth/* scenarios, runtime/oauth. The suite's authorization
// server approves every request by redirect, so the "browser" here is one
// GET whose Location carries the code: no person is involved.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/oauth"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("kiln-conformance-client: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: client [args...] SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)")
	}
	serverURL := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc map[string]any
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT is not a JSON object: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, scenario, serverURL, sc); err != nil {
		log.Fatalf("scenario %q: %v", scenario, err)
	}
}

func run(ctx context.Context, scenario, serverURL string, sc map[string]any) error {
	cfg := &config.Backend{Name: "conformance", Transport: config.TransportHTTP, URL: serverURL}
	opts := backend.Options{ClientName: "kiln-conformance", ClientVersion: "1.0.0", Elicit: accept(scenario),
		Listen: scenario == "elicitation-sep1034-client-defaults"}
	if strings.HasPrefix(scenario, "auth/") {
		dir, err := os.MkdirTemp("", "kiln-conformance-auth-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Auth = authConfig(sc)
		opts.HTTPClient, err = oauth.NewManager(oauth.ManagerOptions{
			Dir:       filepath.Join(dir, "oauth"),
			Authorize: followRedirect,
		}).HTTPClient(cfg)
		if err != nil {
			return err
		}
	}
	conn, err := backend.Dial(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	tools, err := conn.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	call := func(name string, args map[string]any) error {
		if args == nil {
			args = map[string]any{}
		}
		raw, _ := json.Marshal(args)
		_, err := conn.CallTool(ctx, name, raw, backend.CallOptions{})
		return err
	}
	switch {
	case scenario == "tools_call":
		return call("add_numbers", map[string]any{"a": 5, "b": 3})
	case scenario == "sse-retry":
		return call("test_reconnection", nil)
	case scenario == "elicitation-sep1034-client-defaults":
		return call("test_client_elicitation_defaults", nil)
	case scenario == "json-schema-2020-12-preservation":
		for _, t := range tools {
			if t.Name == "json_schema_2020_12_tool" {
				var schema any
				_ = json.Unmarshal(t.InputSchema, &schema)
				return call("json_schema_echo", map[string]any{"schema": schema})
			}
		}
		return errors.New("tool json_schema_2020_12_tool not listed")
	case scenario == "sep-2322-client-request-state":
		for _, n := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if err := call(n, nil); err != nil {
				log.Printf("call %s: %v", n, err)
			}
		}
	case scenario == "http-standard-headers":
		if len(tools) > 0 {
			_ = call(tools[0].Name, nil)
		}
	case scenario == "http-custom-headers":
		calls, _ := sc["toolCalls"].([]any)
		for _, c := range calls {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			args, _ := m["arguments"].(map[string]any)
			if err := call(name, args); err != nil {
				log.Printf("call %s: %v", name, err)
			}
		}
	case scenario == "http-invalid-tool-headers":
		for _, t := range tools {
			if err := call(t.Name, map[string]any{"region": "us-west1"}); err != nil {
				log.Printf("call %s: %v", t.Name, err)
			}
		}
	case strings.HasPrefix(scenario, "auth/"):
		return call("test-tool", nil)
	}
	return nil
}

// accept plays the person answering a form: an empty accepted form (kiln
// fills in the schema's defaults) or, for the multi-round-trip scenario,
// the confirmation its tools ask for.
func accept(scenario string) backend.ElicitFunc {
	content := `{}`
	if scenario == "sep-2322-client-request-state" {
		content = `{"confirmed":true}`
	}
	return func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":` + content + `}`), nil
	}
}

// authConfig is what an operator would write under a backend's auth: key
// for the scenario: a pre-registered client when the suite hands one out,
// otherwise a client ID metadata document URL with dynamic registration as
// the fallback.
func authConfig(sc map[string]any) *config.Auth {
	str := func(k string) string { s, _ := sc[k].(string); return s }
	a := &config.Auth{
		ClientID:          str("client_id"),
		ClientSecret:      str("client_secret"),
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
		RedirectURL:       "http://localhost:3000/callback",
	}
	if pem := str("private_key_pem"); pem != "" {
		a.Grant = config.GrantClientCredentials
		a.PrivateKey = pem
		a.SigningAlg = str("signing_algorithm")
		a.TokenEndpointAuth = "private_key_jwt"
	} else if strings.Contains(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "client-credentials") {
		a.Grant = config.GrantClientCredentials
	}
	return a
}

// followRedirect plays the browser: the suite's authorization server
// answers the authorization URL with a redirect to the callback at once.
func followRedirect(ctx context.Context, authURL string) (oauth.Callback, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return oauth.Callback{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return oauth.Callback{}, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return oauth.Callback{}, fmt.Errorf("authorization endpoint answered %s without a redirect", resp.Status)
	}
	return oauth.CallbackFromQuery(loc.Query())
}
