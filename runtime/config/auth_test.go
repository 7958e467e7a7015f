package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuthLoads(t *testing.T) {
	cfg := mustLoad(t, `
version: 1
backends:
  hosted:
    transport: http
    url: https://mcp.example.com/mcp
    auth:
      grant: client_credentials
      client_id: kiln
      client_secret: ${HOSTED_SECRET}
      token_endpoint_auth: client_secret_post
      scopes: [read, write]
`, map[string]string{"HOSTED_SECRET": "s3cret"})
	want := &Auth{Grant: GrantClientCredentials, ClientID: "kiln", ClientSecret: "s3cret", TokenEndpointAuth: "client_secret_post", Scopes: []string{"read", "write"}}
	if diff := cmp.Diff(want, cfg.Backends[0].Auth); diff != "" {
		t.Errorf("auth (-want +got):\n%s", diff)
	}
	if got := mustLoad(t, "version: 1\nbackends:\n  h:\n    transport: http\n    url: http://127.0.0.1:1/mcp\n    auth: {}\n", nil).Backends[0].Auth; got == nil || got.Grant != GrantAuthorizationCode {
		t.Errorf("auth: {} = %+v, want the authorization_code default", got)
	}
}

func TestAuthProblems(t *testing.T) {
	head := "version: 1\nbackends:\n  h:\n    transport: http\n    url: http://127.0.0.1:1/mcp\n    auth:\n"
	tests := []struct {
		name, auth string
		vars       map[string]string
		want       []string
	}{
		{"literal secret", "      client_id: x\n      client_secret: hunter2\n", nil, []string{
			"kiln.yaml:8: backends.h.auth.client_secret: secrets come from the environment only; write client_secret: ${KILN_CLIENT_SECRET} and export the variable"}},
		{"literal key", "      private_key: '-----BEGIN'\n", nil, []string{
			"kiln.yaml:7: backends.h.auth.private_key: secrets come from the environment only; write private_key: ${KILN_PRIVATE_KEY} and export the variable"}},
		{"unknown key", "      secret: ${X}\n", nil, []string{
			"kiln.yaml:7: backends.h.auth.secret: unknown auth setting; known: grant, client_id, client_secret, client_metadata_url, token_endpoint_auth, private_key, signing_alg, scopes, redirect_url"}},
		{"bad grant", "      grant: password\n", nil, []string{
			`kiln.yaml:7: backends.h.auth.grant: is "password"; want one of authorization_code, client_credentials`}},
		{"client credentials without id", "      grant: client_credentials\n      client_secret: ${S}\n", map[string]string{"S": "x"}, []string{
			"kiln.yaml:6: backends.h.auth.client_id: missing; the client_credentials grant needs the pre-registered client's ID"}},
		{"unset secret", "      client_id: x\n      client_secret: ${NOPE}\n", nil, []string{
			"kiln.yaml:8: backends.h.auth.client_secret: is empty; export the variable it names (unset: ${NOPE})"}},
		{"jwt with authorization code", "      client_id: x\n      token_endpoint_auth: private_key_jwt\n      private_key: ${K}\n", map[string]string{"K": "pem"}, []string{
			"kiln.yaml:8: backends.h.auth.token_endpoint_auth: applies only to grant: client_credentials (with authorization_code kiln picks the method from the server's metadata); remove it",
			"kiln.yaml:9: backends.h.auth.private_key: applies only to grant: client_credentials (private_key_jwt signs client credentials requests); remove it"}},
		{"redirect with client credentials", "      grant: client_credentials\n      client_id: x\n      client_secret: ${S}\n      redirect_url: http://127.0.0.1:1/cb\n", map[string]string{"S": "s"}, []string{
			"kiln.yaml:10: backends.h.auth.redirect_url: applies only to grant: authorization_code (nothing is redirected without a person logging in); remove it"}},
		{"non-loopback redirect", "      redirect_url: http://example.com/cb\n", nil, []string{
			`kiln.yaml:7: backends.h.auth.redirect_url: must be an http loopback URL such as http://127.0.0.1:8765/callback, got "http://example.com/cb"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectProblems(t, head+tc.auth, tc.vars, tc.want) })
	}
	t.Run("stdio", func(t *testing.T) {
		expectProblems(t, "version: 1\nbackends:\n  s:\n    command: x\n    auth: {client_id: a}\n", nil, []string{
			"kiln.yaml:5: backends.s.auth: not used by stdio backends; remove it or set transport: http (or sse)"})
	})
}
