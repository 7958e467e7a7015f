package cli

import (
	"os"
	"strings"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/scrub"
)

// newScrubber knows the secret values of this config, so they are redacted
// wherever they surface (a backend echoing its token, a stack trace with
// a connection string): the values of the environment variables the config
// references with ${VAR} (that is how operators pass secrets in), env values
// with secret names, every header value, and the HTTP bearer token.
// Referenced values that are plainly not secrets (numbers, paths) stay:
// redacting them would shred normal text.
func newScrubber(cfg *config.Config) *scrub.Scrubber {
	return scrub.New(scrub.Options{Values: secretValues(cfg)})
}

// secretValues lists the values newScrubber redacts, for cfg.
func secretValues(cfg *config.Config) []scrub.Value {
	var values []scrub.Value
	add := func(name, v string) {
		if v != "" {
			values = append(values, scrub.Value{Name: name, Value: v})
		}
	}
	for _, b := range cfg.Backends {
		for _, ref := range b.Vars {
			if v, _ := os.LookupEnv(ref.Name); scrub.SecretName(ref.Name) || !plain(v) {
				add(ref.Name, v)
			}
		}
		for k, v := range b.Env {
			if scrub.SecretName(k) {
				add(k, v)
			}
		}
		for k, v := range b.Headers {
			// "Bearer abc…": the token is the secret, whatever the scheme.
			if _, tok, ok := strings.Cut(v, " "); ok {
				add(k, tok)
			}
			add(k, v)
		}
	}
	add("gateway.http.auth_token", cfg.Gateway.HTTP.AuthToken)
	return values
}

// newSecrets reports whether next holds secret values cur does not; the
// scrubber is built at start-up, so those are redacted only after a
// restart, which the reload log says.
func newSecrets(cur, next *config.Config) bool {
	known := map[string]bool{}
	for _, v := range secretValues(cur) {
		known[v.Value] = true
	}
	for _, v := range secretValues(next) {
		if !known[v.Value] && len(v.Value) >= scrub.MinValueLen {
			return true
		}
	}
	return false
}

// plain reports values that cannot be secrets: numbers and paths.
func plain(v string) bool {
	if strings.Trim(v, "0123456789.") == "" {
		return true
	}
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~/")
}
