package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// ParseIdentity reads an identity as kiln policy explain takes it:
// KIND[:SUBJECT] then CLAIM=VALUE[,VALUE...] words, e.g.
// "jwt:alice groups=ci,ops scope=deploy" or "local:bob". A claim with one
// value is a string, with several an array, as a JWT would carry them.
func ParseIdentity(s string) (toolcall.Identity, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return toolcall.Identity{}, fmt.Errorf("empty identity; write KIND[:SUBJECT] [CLAIM=VALUE[,VALUE]]..., such as jwt:alice groups=ci,ops")
	}
	kind, subject, _ := strings.Cut(words[0], ":")
	if !slices.Contains(config.IdentityKinds, kind) {
		return toolcall.Identity{}, fmt.Errorf("identity kind %q: want one of %s, as in jwt:alice", kind, strings.Join(config.IdentityKinds, ", "))
	}
	id := toolcall.Identity{Kind: kind, Subject: subject}
	for _, w := range words[1:] {
		name, val, ok := strings.Cut(w, "=")
		if !ok || name == "" || val == "" {
			return toolcall.Identity{}, fmt.Errorf("claim %q: write CLAIM=VALUE or CLAIM=V1,V2", w)
		}
		if kind != config.KindJWT {
			return toolcall.Identity{}, fmt.Errorf("claim %q: only a jwt identity carries claims", w)
		}
		if id.Claims == nil {
			id.Claims = map[string]any{}
		}
		vals := strings.Split(val, ",")
		if len(vals) == 1 {
			id.Claims[name] = val
			continue
		}
		arr := make([]any, len(vals))
		for i, v := range vals {
			arr[i] = v
		}
		id.Claims[name] = arr
	}
	return id, nil
}
