package cli

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/oauth"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/usecount"
)

// sharedState is where kiln keeps what outlives one process: Redis when
// gateway.state_url is set (a fleet), else files in gateway.state_dir.
type sharedState struct {
	redis *state.Redis // nil without state_url
}

// openState connects to gateway.state_url when it is set; Redis that does
// not answer stops kiln (the error names the key and the fix) rather than
// leaving this replica on local files, disagreeing with the fleet.
func openState(ctx context.Context, cfg *config.Config, log *slog.Logger) (*sharedState, error) {
	if cfg.Gateway.StateURL == "" {
		return &sharedState{}, nil
	}
	r, err := state.Open(ctx, cfg.Gateway.StateURL, cfg.Gateway.ConnectTimeout, state.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	return &sharedState{redis: r}, nil
}

func (s *sharedState) close() {
	if s.redis != nil {
		s.redis.Close()
	}
}

// registrations is the catalog's store: the fleet's in Redis (always kept:
// replicas must agree whatever registration.persist says), else the state
// file when registration.persist is on, else none.
func (s *sharedState) registrations(cfg *config.Config) catalog.Store {
	switch {
	case s.redis != nil:
		return s.redis.Hash("registrations")
	case cfg.Gateway.Registration.Persist:
		return catalog.NewFileStore(filepath.Join(cfg.Gateway.StateDir, catalog.RegistrationsFile))
	}
	return nil
}

// tokens is the OAuth token store: the fleet's in Redis, else files in
// state_dir/oauth.
func (s *sharedState) tokens(cfg *config.Config) oauth.TokenStore {
	if s.redis != nil {
		return oauth.NewSharedStore(s.redis.Hash("oauth"))
	}
	return oauth.NewStore(filepath.Join(cfg.Gateway.StateDir, "oauth"))
}

// usage opens the search usage counts and says how often to save them: a
// fleet shares them every 10s, so replicas rank alike soon; a file is
// rewritten every 30s, which bounds what a crash loses.
func (s *sharedState) usage(ctx context.Context, cfg *config.Config) (*usecount.Counts, time.Duration, error) {
	if s.redis != nil {
		u, err := usecount.OpenShared(ctx, s.redis.Counters("usage"))
		return u, 10 * time.Second, err
	}
	u, err := usecount.Open(filepath.Join(cfg.Gateway.StateDir, "usage.json"))
	return u, 30 * time.Second, err
}

// problem is kiln://health's view of the shared state; nil without one.
func (s *sharedState) problem() func() error {
	if s.redis == nil {
		return nil
	}
	return s.redis.Err
}

// stateURLSecret is the password in gateway.state_url, for the scrubber.
func stateURLSecret(cfg *config.Config) []scrub.Value {
	u, err := url.Parse(cfg.Gateway.StateURL)
	if err != nil || u.User == nil {
		return nil
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return []scrub.Value{{Name: "gateway.state_url", Value: pw}}
	}
	return nil
}

// limitCounter counts policies' rate and max_in_flight: across the fleet
// in Redis, else in this process (nil).
func (s *sharedState) limitCounter() policy.Counter {
	if s.redis != nil {
		return s.redis.Limiter("limits")
	}
	return nil
}
