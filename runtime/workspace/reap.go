package workspace

import (
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
		pids := descendants(self)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_, _, reaped := reapChildren(0)
		if len(pids) == 0 || time.Now().After(deadline) {
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

// descendants lists the processes descended from pid, ended ones not yet
// reaped included, from /proc's children lists.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

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
