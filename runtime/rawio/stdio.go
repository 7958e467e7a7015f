package rawio

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrNotStream is Reopen's answer for a file that is not a pipe or a
// socket (a terminal, a regular file, /dev/null): those stay with the
// os package's blocking reads.
var ErrNotStream = errors.New("rawio: not a pipe or a socket")

// ErrWrongWay is Reopen's answer for a pipe end asked for the other
// direction (stdin that is a pipe's write end): f's own reads fail as
// they should, where a reopened end would wait forever.
var ErrWrongWay = errors.New("rawio: pipe end open the other way")

func accessWord(flag int) string {
	if flag&syscall.O_ACCMODE == syscall.O_WRONLY {
		return "writing"
	}
	return "reading"
}

// Reopen returns a raw File on the pipe or socket f (the process's stdin
// or stdout) without changing f, for reading (os.O_RDONLY) or writing
// (os.O_WRONLY).
//
// A pipe is opened anew through /proc/self/fd: a file description of its
// own, so its nonblocking mode is not seen by f or by another process
// holding the same pipe, whose blocking reads or writes would otherwise
// start failing with EAGAIN. A socket cannot be opened so; its duplicate
// shares f's description, so it is set nonblocking and set back when the
// File closes.
func Reopen(f *os.File, flag int) (*File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	var statErr error
	if err := rc.Control(func(fd uintptr) { statErr = syscall.Fstat(int(fd), &st) }); err != nil {
		return nil, err
	}
	if statErr != nil {
		return nil, fmt.Errorf("rawio: stat %s: %w", f.Name(), statErr)
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		var fd, mode uintptr
		_ = rc.Control(func(sfd uintptr) {
			fd = sfd
			mode, _, _ = syscall.RawSyscall(syscall.SYS_FCNTL, sfd, syscall.F_GETFL, 0)
		})
		// A pipe opened anew can go either way: the read end of stdout
		// would be reopened for writing, and kiln would wait on a pipe
		// of its own instead of failing as it does on f.
		if have := int(mode) & syscall.O_ACCMODE; have != syscall.O_RDWR && have != flag&syscall.O_ACCMODE {
			return nil, fmt.Errorf("%w: %s is not open for %s", ErrWrongWay, f.Name(), accessWord(flag))
		}
		return reopenPipe(fd, f.Name(), flag)
	case syscall.S_IFSOCK:
		return dupSocket(f)
	}
	return nil, ErrNotStream
}

// reopenPipe opens the pipe fd anew. f.Fd() is not used to find fd: it
// would put a file os holds nonblocking back into blocking mode.
func reopenPipe(fd uintptr, name string, flag int) (*File, error) {
	// O_NONBLOCK also keeps the open from waiting for the other end, as
	// opening a pipe does when it has none left.
	g, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rawio: reopen %s: %w", name, err)
	}
	r, err := New(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	return r, nil
}

func dupSocket(f *os.File) (*File, error) {
	var fd int
	var err error
	// Close-on-exec from the start: kiln forks backends and workers while
	// it sets up its stdio, and a child given the duplicate would hold the
	// client's socket open past kiln's exit.
	if cerr := rawControl(f, func(sfd uintptr) {
		r, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, sfd, syscall.F_DUPFD_CLOEXEC, 0)
		if fd = int(r); e != 0 {
			err = e
		}
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("rawio: dup %s: %w", f.Name(), err)
	}
	flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		syscall.Close(fd)
		return nil, fmt.Errorf("rawio: %s: %w", f.Name(), e)
	}
	wasBlocking := flags&syscall.O_NONBLOCK == 0
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("rawio: %s: %w", f.Name(), err)
	}
	r, err := New(os.NewFile(uintptr(fd), f.Name()))
	if err != nil {
		if wasBlocking {
			_ = syscall.SetNonblock(fd, false)
		}
		syscall.Close(fd)
		return nil, err
	}
	// Set back through f once the duplicate is closed: Close then waits
	// for the raw reads and writes still running on it, and one started
	// after the mode went back would block its thread outside the
	// scheduler's knowledge. A socket that came nonblocking stays so.
	if wasBlocking {
		r.restore = func() { _ = rawControl(f, func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) }) }
	}
	return r, nil
}

func rawControl(f *os.File, fn func(fd uintptr)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(fn)
}
