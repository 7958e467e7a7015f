package cli

import (
	"fmt"
	"net/http"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/server"
)

// profileView is one profiles.NAME: its own server (its exposure and
// tool list), sharing the gateway's engine, sandbox and backends; the
// profile rides in every request's context, so the policy guard and the
// listings keep to its tools in every tier.
type profileView struct {
	p   *policy.Profile
	srv *server.Server
}

// newProfileViews builds a server per profile from the gateway's options.
func newProfileViews(cfg *config.Config, opts server.Options) map[string]*profileView {
	views := map[string]*profileView{}
	for _, p := range cfg.Profiles {
		o := opts
		o.Config = cfg.ForProfile(p)
		views[p.Name] = &profileView{p: policy.CompileProfile(p), srv: server.New(o)}
	}
	return views
}

// syncProfiles relists each profile's exposed tools after a change of the
// live tool set, as the gateway's own server does.
func syncProfiles(views map[string]*profileView) {
	for _, v := range views {
		v.srv.SyncTools()
	}
}

// profileRoutes serves each profile at /mcp/NAME, /sse/NAME and
// /message/NAME beside the gateway's own endpoints in main.
func profileRoutes(main http.Handler, views map[string]*profileView) http.Handler {
	if len(views) == 0 {
		return main
	}
	mux := http.NewServeMux()
	mux.Handle("/", main)
	for name, v := range views {
		h := v.srv.HandlerAt("/mcp/"+name, "/sse/"+name, "/message/"+name)
		in := withProfile(h, v.p)
		for _, path := range []string{"/mcp/" + name, "/sse/" + name, "/message/" + name} {
			mux.Handle(path, in)
		}
	}
	return mux
}

func withProfile(h http.Handler, p *policy.Profile) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(policy.WithProfile(r.Context(), p)))
	})
}

// stdioProfile is the view kiln serve --profile NAME serves, or an error
// naming the profiles there are.
func stdioProfile(cfg *config.Config, views map[string]*profileView, name string) (*profileView, error) {
	if v, ok := views[name]; ok {
		return v, nil
	}
	var names []string
	for _, p := range cfg.Profiles {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("--profile %s: %s declares no profiles; add profiles.%s with its tools", name, cfg.Path, name)
	}
	return nil, fmt.Errorf("--profile %s: no such profile in %s; it has %v", name, cfg.Path, names)
}
