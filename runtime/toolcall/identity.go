package toolcall

import "context"

// Identity is who a call is made for: the policy, the rate limits and the
// audit log all decide by it, so it travels in the call's context from the
// front door (HTTP auth, stdio, a kiln connect client) to every tier.
type Identity struct {
	// Kind says how the caller was recognised: "jwt" (a verified JWT's
	// sub), "token" (the static gateway.http.auth_token), "local" (the
	// user running kiln over stdio, or a kiln connect client's uid) or
	// "addr" (an unauthenticated loopback HTTP client).
	Kind string
	// Subject names the caller within its kind: the JWT's sub, the local
	// user's name, the client's address; empty for "token".
	Subject string
	// Claims are a verified JWT's claims (groups, scope, email, ...); nil
	// for the other kinds.
	Claims map[string]any
}

// String is the identity as logs and the audit log print it, e.g.
// "jwt alice" or "token".
func (id Identity) String() string {
	if id.Subject == "" {
		return id.Kind
	}
	return id.Kind + " " + id.Subject
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity ctx carries, and false when the front
// door set none (in-process callers such as tests and benchmarks).
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
