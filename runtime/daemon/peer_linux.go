//go:build linux

package daemon

import (
	"context"
	"net"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// withPeer returns ctx carrying the identity of the process at the other
// end of c, read from the kernel (SO_PEERCRED), not from anything the
// client says. The socket is user-private, so this is the daemon's own
// user unless its folder's mode was widened.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil || cred == nil {
		return ctx
	}
	return toolcall.WithIdentity(ctx, LocalUser(int(cred.Uid)))
}
