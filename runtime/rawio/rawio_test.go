package rawio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func rawPipe(t *testing.T) (r, w *File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if r, err = New(pr); err != nil {
		t.Fatal(err)
	}
	if w, err = New(pw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// A write larger than the pipe's buffer waits for room (EAGAIN) and the
// reader gets every byte in order, then io.EOF once the writer closes.
func TestPipeCarriesMoreThanItsBuffer(t *testing.T) {
	r, w := rawPipe(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, 16 pipe buffers
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	var wn int
	go func() {
		defer wg.Done()
		wn, werr = w.Write(want)
		w.Close()
	}()
	got, err := io.ReadAll(r)
	r.Close() // a reader that stopped early must not leave the writer waiting
	wg.Wait()
	if werr != nil || wn != len(want) {
		t.Fatalf("Write = %d, %v; want %d, nil", wn, werr, len(want))
	}
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
}

// Close ends a Read that waits for data.
func TestCloseEndsAWaitingRead(t *testing.T) {
	r, _ := rawPipe(t)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	r.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v, want os.ErrClosed", err)
	}
}

// A write to a pipe nobody reads any more fails instead of waiting.
func TestWriteToAClosedPipeFails(t *testing.T) {
	r, w := rawPipe(t)
	r.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write: %v, want EPIPE", err)
	}
}

// New refuses a blocking file: a raw read of it would hold a thread the
// scheduler thinks is running.
func TestNewRefusesBlockingFiles(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pr.Fd() // back to blocking mode
	if _, err := New(pr); !errors.Is(err, ErrBlocking) {
		t.Fatalf("New(blocking pipe) = %v, want ErrBlocking", err)
	}
	pr.Close()
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	var flags uintptr
	if err := rawControl(f, func(fd uintptr) {
		flags, _, _ = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil {
		t.Fatal(err)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// A reopened pipe is a description of its own: the process's stdin stays
// in blocking mode for every other holder, and both ends still carry
// data.
func TestReopenPipeLeavesTheOriginalBlocking(t *testing.T) {
	// Like a process's inherited stdin and stdout: blocking, not polled.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	in, out := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdout")
	defer in.Close()
	defer out.Close()
	r, err := Reopen(in, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := Reopen(out, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if nonblocking(t, in) || nonblocking(t, out) {
		t.Fatal("Reopen put the original pipe ends into nonblocking mode")
	}
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "line\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
}

// A socket's duplicate shares its description: nonblocking while the
// File is open, blocking again once it closes.
func TestReopenSocketRestoresBlockingMode(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer mine.Close()
	defer peer.Close()
	r, err := Reopen(mine, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if !nonblocking(t, mine) {
		t.Fatal("the socket is not nonblocking while the raw File is open")
	}
	if _, err := peer.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	r.Close()
	if nonblocking(t, mine) {
		t.Fatal("Close left the shared socket nonblocking")
	}
	// The original still works after the duplicate closed.
	if _, err := peer.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if n, err := mine.Read(buf); err != nil || string(buf[:n]) != "again" {
		t.Fatalf("original Read = %q, %v", buf[:n], err)
	}
}

// Terminals, files and /dev/null stay with blocking reads.
func TestReopenRefusesOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, os.DevNull} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Reopen(f, os.O_RDONLY); !errors.Is(err, ErrNotStream) {
			t.Errorf("Reopen(%s) = %v, want ErrNotStream", name, err)
		}
		f.Close()
	}
}

// A net connection's file works too (a socket kiln is handed by its
// parent).
func TestReopenUnixConn(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.(*net.UnixConn).File()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Reopen(f, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hi" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

// A socket handed over nonblocking (its other holder polls it) is not
// set blocking when the File closes: Close puts back the mode it found.
func TestReopenSocketKeepsTheModeItCameIn(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer mine.Close()
	defer peer.Close()
	r, err := Reopen(mine, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !nonblocking(t, mine) {
		t.Fatal("Close set a socket that came nonblocking to blocking mode")
	}
}

// Closing twice sets a shared socket back once: the second Close must
// not undo a mode its other holder chose in between.
func TestReopenSocketRestoresOnce(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer mine.Close()
	defer peer.Close()
	r, err := Reopen(mine, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := rawControl(mine, func(fd uintptr) { _ = syscall.SetNonblock(int(fd), true) }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !nonblocking(t, mine) {
		t.Fatal("a second Close set the shared socket blocking again")
	}
}

// New refuses a nonblocking file the poller does not hold (os.NewFile
// of a descriptor that was blocking then): its Read would find nothing
// to wait on at the first EAGAIN and fail.
func TestNewRefusesFilesThePollerDoesNotHold(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	pr, pw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer pr.Close()
	defer pw.Close()
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	r, err := New(pr)
	if err == nil {
		_, err = r.Read(make([]byte, 1))
		t.Fatalf("New accepted a file the poller does not hold; its Read on an empty pipe: %v", err)
	}
	if !errors.Is(err, ErrNotPolled) {
		t.Fatalf("New = %v, want ErrNotPolled", err)
	}
}

// A socket's duplicate is close-on-exec: a backend forked while kiln sets
// up its stdio must not hold the client's socket.
func TestReopenSocketDuplicateIsCloseOnExec(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer mine.Close()
	defer peer.Close()
	r, err := Reopen(mine, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var flags uintptr
	if err := rawControl(r.f, func(fd uintptr) { flags, _, _ = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0) }); err != nil {
		t.Fatal(err)
	}
	if flags&syscall.FD_CLOEXEC == 0 {
		t.Fatal("the socket's duplicate is inherited by children kiln starts")
	}
}

// A read of a shared socket that its other holder set back to blocking
// mode (Node restores its stdio's modes as it exits) still waits in the
// poller, not in the kernel on a thread the scheduler believes is
// running: a garbage collection, which stops every running thread, would
// wait for that one forever. The check runs in a process of its own, which
// hangs when it fails.
func TestSocketReadWaitsInThePollerWhenSetBlocking(t *testing.T) {
	if os.Getenv("RAWIO_BLOCKED_SOCKET_CHILD") == "1" {
		blockedSocketChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSocketReadWaitsInThePollerWhenSetBlocking$")
	cmd.Env = append(os.Environ(), "RAWIO_BLOCKED_SOCKET_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		cmd.Process.Kill()
		<-done
		t.Fatal("collections hang while a raw read waits on a socket set back to blocking")
	}
}

func blockedSocketChild() {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		panic(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	r, err := Reopen(mine, os.O_RDONLY)
	if err != nil {
		panic(err)
	}
	if err := rawControl(mine, func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) }); err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	for range 100 {
		runtime.Gosched()
		runtime.GC()
	}
	r.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		panic(fmt.Sprintf("Read after Close: %v, want os.ErrClosed", err))
	}
}

// Writes to a socket whose peer is gone fail with EPIPE, with the
// description in either mode.
func TestSocketWriteToAGonePeerFails(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, peer := os.NewFile(uintptr(fds[0]), "stdout"), os.NewFile(uintptr(fds[1]), "peer")
	defer mine.Close()
	w, err := Reopen(mine, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	peer.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write: %v, want EPIPE", err)
	}
}

// A pipe end asked for the other direction is refused: reopened through
// /proc it would turn into the direction asked for, and a stdin that is a
// pipe's write end would wait on kiln's own pipe instead of failing.
func TestReopenRefusesAPipeEndTheOtherWay(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	if f, err := Reopen(w, os.O_RDONLY); !errors.Is(err, ErrWrongWay) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Reopen(write end, O_RDONLY) = %v, want ErrWrongWay", err)
	}
	if f, err := Reopen(r, os.O_WRONLY); !errors.Is(err, ErrWrongWay) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Reopen(read end, O_WRONLY) = %v, want ErrWrongWay", err)
	}
}
