package rawio

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// File is a pipe or socket read and written without the scheduler's
// system-call state.
type File struct {
	f  *os.File
	rc syscall.RawConn
	// restore runs after the file closes: a socket shared with the
	// process's parent goes back to the mode it came in.
	restore func()
	closed  atomic.Bool
	// sock: reads and writes say MSG_DONTWAIT, so they never block even
	// when another holder of a shared socket sets it back to blocking
	// mode (Node, for one, restores its stdio's modes as it exits).
	sock bool
}

// ErrBlocking is New's answer for a file in blocking mode: a raw read of
// it would stall a thread the scheduler believes is running.
var ErrBlocking = errors.New("rawio: file is in blocking mode")

// ErrNotPolled is New's answer for a nonblocking file the runtime's
// poller does not hold (os.NewFile of a descriptor that was blocking
// then): a read finding nothing would have nothing to wait on.
var ErrNotPolled = errors.New("rawio: file is not held by the runtime's poller")

// New wraps f, which must be nonblocking and held by the poller, as the
// ends of os.Pipe and net connections' files are. New takes f over: Close
// closes it. f's Fd must not be called afterwards: it puts f back into
// blocking mode, and a raw read would then stall its thread.
func New(f *os.File) (*File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	// Only a file the poller holds takes deadlines; f has none to clear.
	if err := f.SetReadDeadline(time.Time{}); errors.Is(err, os.ErrNoDeadline) {
		return nil, ErrNotPolled
	} else if err != nil {
		return nil, err
	}
	var nonblock, sock bool
	if err := rc.Control(func(fd uintptr) {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && flags&syscall.O_NONBLOCK != 0
		var st syscall.Stat_t
		sock = syscall.Fstat(int(fd), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK
	}); err != nil {
		return nil, err
	}
	if !nonblock {
		return nil, ErrBlocking
	}
	return &File{f: f, rc: rc, sock: sock}, nil
}

// OrFile is New(f), or f itself when f cannot be read raw: the caller
// keeps a working file either way. f stays the owner of the descriptor:
// closing either closes it.
func OrFile(f *os.File) io.ReadWriteCloser {
	if r, err := New(f); err == nil {
		return r
	}
	return f
}

// Read reads what the kernel holds, waiting for the file to become
// readable when it holds nothing. It reports io.EOF at the end.
func (r *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	read := sysRead
	if r.sock {
		read = sysRecv
	}
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r1, e := read(fd, p)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = r1, e
			return true
		}
	})
	if err := r.wrap("read", err, errno); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting for room when the kernel's buffer is
// full.
func (r *File) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	write := sysWrite
	if r.sock {
		write = sysSend
	}
	err := r.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r1, e := write(fd, p[n:])
			switch e {
			case 0:
				n += r1
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	return n, r.wrap("write", err, errno)
}

// wrap words a failed read or write as os does: the poller's error
// (os.ErrClosed once Close ran: the poller's own closing error is not
// exported), else the system call's; nil when neither failed.
func (r *File) wrap(op string, err error, errno syscall.Errno) error {
	switch {
	case err != nil && r.closed.Load():
		err = os.ErrClosed
	case err == nil && errno != 0:
		err = errno
	case err == nil:
		return nil
	}
	return &os.PathError{Op: op, Path: r.f.Name(), Err: err}
}

// Close closes the file; a Read or Write waiting on it returns.
func (r *File) Close() error {
	first := !r.closed.Swap(true)
	err := r.f.Close()
	if first && r.restore != nil {
		r.restore()
	}
	return err
}
