package config

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	// secretKeys may only hold a ${VAR} reference: a secret written into
	// kiln.yaml ends up in version control and in every copy of the file.
	secretKeys = []string{"client_secret", "private_key"}
	envRefRE   = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`)
)

// auth checks a backend's auth: mapping (known keys, scalars, scopes a list).
func (pr parser) auth(n *yaml.Node, path string) bool {
	if isNull(n) || n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a mapping such as {grant: client_credentials, client_id: kiln, client_secret: ${KILN_CLIENT_SECRET}}", kind(n))
		return false
	}
	ents, ok := pr.entries(n, path)
	for _, e := range ents {
		k, kp := e.key.Value, keyPath(path, e.key.Value)
		switch {
		case !slices.Contains(authKeys, k):
			pr.p.add(e.key.Line, kp, "unknown auth setting; known: %s", strings.Join(authKeys, ", "))
			ok = false
		case k == "scopes":
			ok = pr.list(e.val, kp) && ok
		default:
			ok = pr.scalar(e.val, kp) && ok
			if slices.Contains(secretKeys, k) && !envRefRE.MatchString(strings.TrimSpace(e.val.Value)) {
				pr.p.add(e.val.Line, kp, "secrets come from the environment only; write %s: ${%s} and export the variable", k, strings.ToUpper("KILN_"+k))
				ok = false
			}
		}
	}
	return ok
}

// auth builds a backend's Auth from its checked mapping, or nil.
func (b *builder) auth(rb *rawBackend, path string) *Auth {
	e, ok := rb.keys["auth"]
	if !ok || e.val.Kind != yaml.MappingNode {
		return nil
	}
	path += ".auth"
	a := &Auth{Grant: GrantAuthorizationCode}
	vals := map[string]value{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := deref(e.val.Content[i]), deref(e.val.Content[i+1])
		if k.Value == "scopes" {
			for j, s := range v.Content {
				a.Scopes = append(a.Scopes, b.node(path+".scopes["+strconv.Itoa(j)+"]", deref(s)).s)
			}
			continue
		}
		vals[k.Value] = b.node(keyPath(path, k.Value), v)
	}
	oneOf := func(k string, allowed []string, dst *string) {
		if v, ok := vals[k]; ok && !v.bad {
			if !slices.Contains(allowed, v.s) {
				b.p.addValue(v, "is %s; want one of %s", strconv.Quote(v.s), strings.Join(allowed, ", "))
				return
			}
			*dst = v.s
		}
	}
	oneOf("grant", grants, &a.Grant)
	oneOf("token_endpoint_auth", tokenEndpointAuths, &a.TokenEndpointAuth)
	oneOf("signing_alg", signingAlgs, &a.SigningAlg)
	a.ClientID = vals["client_id"].s
	a.ClientSecret = vals["client_secret"].s
	a.PrivateKey = vals["private_key"].s
	a.ClientMetadataURL = vals["client_metadata_url"].s
	a.RedirectURL = vals["redirect_url"].s
	if v, ok := vals["client_metadata_url"]; ok && !v.bad {
		if u, err := url.Parse(v.s); err != nil || u.Scheme != "https" || strings.Trim(u.Path, "/") == "" {
			b.p.addValue(v, "must be an https URL with a path (a client ID metadata document), got %s", strconv.Quote(v.s))
		}
	}
	if v, ok := vals["redirect_url"]; ok && !v.bad {
		if u, err := url.Parse(v.s); err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
			b.p.addValue(v, "must be an http loopback URL such as http://127.0.0.1:8765/callback, got %s", strconv.Quote(v.s))
		}
	}
	for k, v := range vals {
		if slices.Contains(secretKeys, k) && !v.bad && v.s == "" && len(v.unset) > 0 {
			b.p.addValue(v, "is empty; export the variable it names")
		}
	}
	// Settings one grant ignores are errors, not silent no-ops.
	only := func(k, grant, why string) {
		if v, ok := vals[k]; ok && !v.bad && a.Grant != grant {
			b.p.addValue(v, "applies only to grant: %s (%s); remove it", grant, why)
		}
	}
	only("token_endpoint_auth", GrantClientCredentials, "with authorization_code kiln picks the method from the server's metadata")
	only("private_key", GrantClientCredentials, "private_key_jwt signs client credentials requests")
	only("signing_alg", GrantClientCredentials, "it signs the private_key_jwt assertion")
	only("client_metadata_url", GrantAuthorizationCode, "client credentials need a pre-registered client_id")
	only("redirect_url", GrantAuthorizationCode, "nothing is redirected without a person logging in")
	if a.Grant == GrantClientCredentials {
		switch {
		case a.ClientID == "":
			b.p.add(e.key.Line, path+".client_id", "missing; the client_credentials grant needs the pre-registered client's ID")
		case a.ClientSecret == "" && a.PrivateKey == "" && !rb.explained["auth"]:
			b.p.add(e.key.Line, path, "client_credentials needs client_secret: ${VAR} or private_key: ${VAR} (a PEM key for private_key_jwt)")
		}
	}
	if a.TokenEndpointAuth == "private_key_jwt" && vals["private_key"].raw == "" {
		b.p.add(e.key.Line, path+".private_key", "missing; token_endpoint_auth private_key_jwt signs with private_key: ${VAR} (PEM)")
	}
	return a
}

func isLoopback(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}
