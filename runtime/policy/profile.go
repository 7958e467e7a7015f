package policy

import (
	"context"
	"fmt"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
)

// Profile is a compiled profiles.NAME: the tools one endpoint serves. It
// travels in the context of every call made through that endpoint, so the
// guard and the listings see it in every tier, as they see the identity.
type Profile struct {
	Name  string
	tools globs
}

// CompileProfile compiles p's globs.
func CompileProfile(p config.Profile) *Profile {
	return &Profile{Name: p.Name, tools: compileGlobs(p.Tools)}
}

// Serves reports whether t is among the profile's tools.
func (p *Profile) Serves(t Tool) bool {
	_, ok := p.tools.first(t.ID())
	return ok
}

type profileKey struct{}

// WithProfile returns ctx carrying p.
func WithProfile(ctx context.Context, p *Profile) context.Context {
	return context.WithValue(ctx, profileKey{}, p)
}

// ProfileFrom returns the profile ctx carries, or nil (the whole gateway).
func ProfileFrom(ctx context.Context) *Profile {
	p, _ := ctx.Value(profileKey{}).(*Profile)
	return p
}

// outOfProfile is the refusal of a tool the endpoint's profile does not
// serve: for its callers the tool does not exist.
func outOfProfile(p *Profile, backend, tool string) *dispatch.Error {
	return &dispatch.Error{Code: dispatch.CodeNotFound, Backend: backend, Tool: tool,
		Message: fmt.Sprintf("%s.%s is not served here (profile %s); call search_tools to find the tools this endpoint serves", backend, tool, p.Name)}
}
