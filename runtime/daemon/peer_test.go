//go:build linux

package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// TestSessionRunsForThePeer: a kiln connect client's session context
// carries the identity the kernel reports for the socket's peer.
func TestSessionRunsForThePeer(t *testing.T) {
	id := testIdentity(t)
	ln, err := Listen(id)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Answers each session with the identity its context carries.
	who := func(ctx context.Context, in io.Reader, out io.Writer) error {
		got, ok := toolcall.IdentityFrom(ctx)
		fmt.Fprintf(out, "%v %s\n", ok, got)
		_, err := io.Copy(io.Discard, in)
		return err
	}
	go func() { done <- Serve(ctx, ln, ServeOptions{Key: id.Key, Idle: time.Minute, Session: who}) }()
	c, err := Dial(t.Context(), id, VerbConnect)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := c.R.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if want := "true local " + name + "\n"; line != want {
		t.Errorf("session identity %q, want %q", line, want)
	}
}
