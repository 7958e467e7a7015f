package daemon

import (
	"os/user"
	"strconv"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// LocalUser is the identity of a local user by uid: Kind "local", Subject
// the user's login name (the uid in digits when the system has no name
// for it). Shared by kiln serve over stdio (the user running it) and the
// daemon (a kiln connect client's uid).
func LocalUser(uid int) toolcall.Identity {
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil && u.Username != "" {
		name = u.Username
	}
	return toolcall.Identity{Kind: "local", Subject: name}
}
