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
	for _, b := range cfg.Backends {
		values = append(values, backendSecrets(b)...)
	}
	if t := cfg.Gateway.HTTP.AuthToken; t != "" {
		values = append(values, scrub.Value{Name: "gateway.http.auth_token", Value: t})
	}
	values = append(values, stateURLSecret(cfg)...)
	return values
}

// backendSecrets lists one backend's secret values (see newScrubber); a
// backend registered at run time goes through it too.
func backendSecrets(b config.Backend) []scrub.Value {
	var values []scrub.Value
	add := func(name, v string) {
		if v != "" {
			values = append(values, scrub.Value{Name: name, Value: v})
		}
	}
	for _, ref := range b.Vars {
		if v, _ := os.LookupEnv(ref.Name); scrub.SecretName(ref.Name) || !plain(v) {
			add(ref.Name, v)
		}
	}
	if b.Auth != nil {
		add("auth.client_secret", b.Auth.ClientSecret)
		add("auth.private_key", b.Auth.PrivateKey)
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
	return values
}

// plain reports values that cannot be secrets: numbers and paths.
func plain(v string) bool {
	if strings.Trim(v, "0123456789.") == "" {
		return true
	}
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~/")
}

// learnTokens hands the OAuth tokens kiln obtains or refreshes while it
// runs to the scrubber, so a backend echoing its bearer token (or a log
// line) never shows it.
func learnTokens(sc *scrub.Scrubber) func(...string) {
	return func(tokens ...string) {
		for _, t := range tokens {
			if t != "" {
				sc.Learn(scrub.Value{Name: "oauth token", Value: t})
			}
		}
	}
}
