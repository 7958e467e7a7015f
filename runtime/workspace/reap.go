package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapBound bounds how long workspace-exec hunts descendants after bash
// ended: a fork loop racing the kills must not keep the command running.
const reapBound = 5 * time.Second

// supervise runs the command as a child of this process and outlives it.
// In a PID namespace bash is its first process, and its end ends every
// process it started; without one, a descendant that left the process
// group (setsid, a daemon) escaped kiln's group kill and outlived the
// command and KillShell. As a child subreaper this process inherits such
// orphans; when bash ends, or kiln sends SIGTERM (shell.kill), it kills
// bash's group and every descendant left, reaps them, and exits with
// bash's status (128+n for signal n, as kiln reports a signaled command).
//
// The child is workspace-exec again, without Reap: it confines itself and
// execs bash, and this process stays outside the command's Landlock
// domain, whose signal scope (ABI 6) then keeps the command from killing
// it and escaping with what it started. Confined here, on the thread that
// forks bash, it shared the command's domain.
func supervise(spec execSpec, stderr io.Writer) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "kiln workspace-exec: cannot adopt the command's orphans (PR_SET_CHILD_SUBREAPER): %v; the command was not run\n", err)
		return 126
	}
	spec.Reap = false
	raw, err := json.Marshal(spec)
	if err != nil {
		fmt.Fprintf(stderr, "kiln workspace-exec: %v\n", err)
		return 126
	}
	// The child's parent-death signal follows the thread that forks it.
	runtime.LockOSThread()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// An orphan the command leaves is this process's child: it is reaped
	// as it ends, not when bash does, or a long command that keeps
	// leaving them fills the PID table with zombies. Bash is reaped by
	// the same loop, so no second waiter races it for its status.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	// Its own group, so kiln's SIGTERM reaches this process alone and the
	// group kill below spares it; /proc/self/exe is this very binary, even
	// if an upgrade replaced the file since.
	const exe = "/proc/self/exe"
	p, err := os.StartProcess(exe, []string{exe, ExecCommand, string(raw)}, &os.ProcAttr{Env: spec.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		fmt.Fprintf(stderr, "kiln workspace-exec: start the command: %v\n", err)
		return 127
	}
	var ws syscall.WaitStatus
	for ended := false; !ended; {
		select {
		case <-chld:
		case <-term:
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
		ws, ended, _ = reapChildren(p.Pid)
	}
	endDescendants(p.Pid, time.Now().Add(reapBound))
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// endDescendants kills process group group (bash's, kept from reuse while
// a member lives) and every process still descended from this one, and
// reaps them, until none is left or deadline passes.
func endDescendants(group int, deadline time.Time) {
	_ = syscall.Kill(-group, syscall.SIGKILL)
	self := os.Getpid()
	for {
		procs := descendants(self)
		for _, p := range procs {
			p.kill()
		}
		for _, p := range procs {
			p.release()
		}
		_, _, reaped := reapChildren(0)
		if len(procs) == 0 || time.Now().After(deadline) {
			return
		}
		if !reaped {
			time.Sleep(time.Millisecond)
		}
	}
}

// reapChildren reaps every child that has ended and reports whether
// there was one; ended says whether watched was, and ws is its status.
func reapChildren(watched int) (ws syscall.WaitStatus, ended, found bool) {
	for {
		var st syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG|unix.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return ws, ended, found
		}
		found = true
		if pid == watched {
			ws, ended = st, true
		}
	}
}

// proc is a descendant found in /proc, held by a pidfd (fd) unless the
// kernel has none (fd -1).
type proc struct{ pid, fd int }

// kill sends SIGKILL to p through its pidfd, which reaches the process it
// was opened on or none, never one that took its PID since.
func (p proc) kill() {
	if p.fd < 0 {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		return
	}
	_ = unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
}

// unreaped reports whether p has not been reaped, so its PID is still its
// own: signal 0 through a pidfd fails with ESRCH only once it has. This
// process (fd -1, never reaped) and processes found without pidfds count
// as unreaped.
func (p proc) unreaped() bool {
	return p.fd < 0 || unix.PidfdSendSignal(p.fd, 0, nil, 0) == nil
}

func (p proc) release() {
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
}

// descendants lists the processes descended from pid, ended ones not yet
// reaped included, from /proc's children lists. A PID read there may be
// reaped by its parent and taken by an unrelated process before it is
// signaled; so each is held by a pidfd and kept only if, once held, it is
// still the child of the process whose list named it, that one not yet
// reaped (its PID unchanged). If the pidfd's process was reaped before the
// check, signaling it reaches nothing. On kernels without pidfd_open
// (before 5.3) PIDs are kept as read, as before.
func descendants(pid int) []proc {
	var out []proc
	queue := []proc{{pid: pid, fd: -1}}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(parent.pid) {
			if seen[c] {
				continue
			}
			p, ok := hold(c, parent)
			if !ok {
				continue
			}
			seen[c] = true
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out
}

// hold opens a pidfd on pid, a child of parent when /proc was read, and
// reports whether it still is.
func hold(pid int, parent proc) (proc, bool) {
	fd, err := pidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		// No pidfd_open: a kernel before 5.3, or a seccomp filter
		// refusing it (Docker's older default profile answers EPERM).
		return proc{pid: pid, fd: -1}, true
	case err != nil:
		return proc{}, false // gone already
	}
	p := proc{pid: pid, fd: fd}
	if parentOf(pid) != parent.pid || !parent.unreaped() {
		p.release()
		return proc{}, false
	}
	return p, true
}

// parentOf reads pid's parent from /proc/<pid>/stat, or -1.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// Seams for tests: a kernel without pidfds, a /proc read gone stale.
var (
	pidfdOpen  = unix.PidfdOpen
	childrenOf = children
)

// children reads pid's children from each of its threads' lists (a child
// belongs to the thread that forked it).
func children(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
