package workspace

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/textcut"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Exit codes reported in shell-shaped results, as timeout(1) and shells
// use them.
const (
	exitTimeout = 124
	// outBufMax bounds what a shell's output keeps; the oldest bytes go
	// first, the model is told.
	outBufMax = 8 << 20
	// waitDelay bounds how long Wait waits for pipes a killed command's
	// escaped descendants might hold.
	waitDelay = 500 * time.Millisecond
	// maxBackgroundShells bounds the background shells one workspace
	// tracks, running or finished and unread: each holds up to outBufMax
	// of output, and a program looping over Bash could start thousands.
	maxBackgroundShells = 16
)

// outBuf collects a command's stdout and stderr, interleaved as a
// terminal shows them. It keeps the newest outBufMax bytes in a ring:
// dropping the oldest by copying the rest cost a copy of the whole buffer
// per pipe read once full (32 GiB allocated for 64 MiB of output).
type outBuf struct {
	mu    sync.Mutex
	ring  []byte // grows to outBufMax, then wraps
	next  int    // where the next byte goes once the ring is full
	total int    // bytes ever written
}

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.total += n
	if len(p) > outBufMax {
		p = p[len(p)-outBufMax:]
	}
	if room := outBufMax - len(o.ring); room > 0 {
		k := min(room, len(p))
		if len(o.ring)+k > cap(o.ring) {
			// Doubling, capped: append's growth of a large slice by a
			// quarter at a time would allocate five times the cap.
			grown := make([]byte, len(o.ring), min(outBufMax, max(2*cap(o.ring), len(o.ring)+k, 4096)))
			copy(grown, o.ring)
			o.ring = grown
		}
		o.ring = append(o.ring, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(o.ring[o.next:], p)
		p = p[k:]
		o.next = (o.next + k) % outBufMax
	}
	return n, nil
}

// written is how many bytes were ever written.
func (o *outBuf) written() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// since returns output from absolute offset off, the new offset, and how
// many bytes after off were dropped.
func (o *outBuf) since(off int) (string, int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	first := o.total - len(o.ring)
	lost := 0
	if off < first {
		lost, off = first-off, first
	}
	older, newer := o.ring[o.next:], o.ring[:o.next]
	skip := off - first
	var b strings.Builder
	b.Grow(len(o.ring) - skip)
	if skip < len(older) {
		b.Write(older[skip:])
		b.Write(newer)
	} else {
		b.Write(newer[skip-len(older):])
	}
	return b.String(), o.total, lost
}

// shell is one running or finished command.
type shell struct {
	id, command string
	seq         int // the number in id, for oldest-first order
	background  bool
	// owner is the client session that started it ("" when none is
	// known): EndSession kills its shells.
	owner   string
	cmd     *exec.Cmd
	out     *outBuf
	started time.Time
	done    chan struct{}

	mu     sync.Mutex
	read   int    // BashOutput's offset into out
	reason string // why kiln killed it, if it did
	exit   int
}

func (s *shell) kill() {
	if s.cmd.Process == nil {
		return
	}
	if s.cmd.SysProcAttr != nil && s.cmd.SysProcAttr.Cloneflags == 0 {
		// No PID namespace: workspace-exec ends bash and its descendants,
		// those that left the group too, on SIGTERM (supervise). Killed
		// itself only if it has not ended within the bound.
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		go func() {
			t := time.NewTimer(2 * reapBound)
			defer t.Stop()
			select {
			case <-s.done:
			case <-t.C:
				_ = s.cmd.Process.Kill()
			}
		}()
		return
	}
	// The group first, then the process: in its own PID namespace the
	// first process's death takes every descendant with it.
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Process.Kill()
}

func (s *shell) killFor(reason string) {
	s.mu.Lock()
	if s.reason == "" {
		s.reason = reason
	}
	s.mu.Unlock()
	s.kill()
}

// finished reports whether the shell has ended.
func (s *shell) finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// status is how a finished shell ended, for a model.
func (s *shell) status() (code int, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason != "" {
		return exitTimeout, fmt.Sprintf("exit code: %d (%s; the whole process group was killed)", exitTimeout, s.reason)
	}
	return s.exit, "exit code: " + strconv.Itoa(s.exit)
}

// spawn starts script under the workspace's confinement, as the next
// bash_N.
func (w *Workspace) spawn(script string, ro ...string) (*shell, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errors.New("the workspace is shutting down")
	}
	w.nextID++
	seq := w.nextID
	w.mu.Unlock()
	return w.spawnAs("bash_"+strconv.Itoa(seq), seq, script, ro...)
}

// spawnAs starts script as shell id.
func (w *Workspace) spawnAs(id string, seq int, script string, ro ...string) (*shell, error) {
	out := &outBuf{}
	cmd, err := w.start(script, func(c *exec.Cmd) {
		c.Stdout, c.Stderr = out, out
		c.WaitDelay = waitDelay
	}, ro...)
	if err != nil {
		return nil, err
	}
	s := &shell{id: id, seq: seq, command: script, cmd: cmd, out: out, started: time.Now(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			code = -1
		}
		s.mu.Lock()
		s.exit = code
		s.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

// run runs script in the foreground until it ends, timeout passes or ctx
// is cancelled; in the last two cases the whole group is killed at once.
func (w *Workspace) run(ctx context.Context, script string, timeout time.Duration, ro ...string) (out string, code int, status string, err error) {
	s, err := w.spawn(script, ro...)
	if err != nil {
		return "", 0, "", err
	}
	w.track(s)
	defer w.untrack(s)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.killFor(fmt.Sprintf("timed out after %s; raise timeout (up to %d ms) or use run_in_background: true and poll with BashOutput",
			timeout, w.cfg.Bash.MaxTimeout.Milliseconds()))
		<-s.done
	case <-ctx.Done():
		s.killFor("cancelled by the client")
		<-s.done
	}
	text, _, _ := s.out.since(0)
	code, status = s.status()
	return text, code, status, nil
}

func (w *Workspace) track(s *shell) {
	w.mu.Lock()
	w.shells[s.id] = s
	closed := w.closed
	w.mu.Unlock()
	if closed {
		s.killFor("the workspace shut down")
	}
}

func (w *Workspace) untrack(s *shell) {
	w.mu.Lock()
	if w.shells[s.id] == s {
		delete(w.shells, s.id)
		if s.background {
			w.background--
		}
	}
	w.mu.Unlock()
}

// admitBackground takes a place for one more background shell. When all
// maxBackgroundShells are taken it forgets the oldest finished one nobody
// read; it reports false when every one is still running.
func (w *Workspace) admitBackground() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.background < maxBackgroundShells {
		w.background++
		return true
	}
	// The oldest finished shell whose output was all read goes first,
	// then the oldest finished one.
	var oldest *shell
	oldestRead := false
	for _, s := range w.shells {
		if !s.background || !s.finished() {
			continue
		}
		read := s.allRead()
		if oldest == nil || (read && !oldestRead) || (read == oldestRead && s.seq < oldest.seq) {
			oldest, oldestRead = s, read
		}
	}
	if oldest == nil {
		return false
	}
	delete(w.shells, oldest.id)
	return true
}

func bashTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		Command         string `json:"command"`
		Timeout         int64  `json:"timeout"`
		Description     string `json:"description"`
		RunInBackground bool   `json:"run_in_background"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Bash: %v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return toolcall.Errorf("Bash: command is empty")
	}
	if msg := denied(a.Command); msg != "" {
		return toolcall.Errorf("Bash refused the command: %s", msg)
	}
	timeout := w.cfg.Bash.Timeout
	if a.RunInBackground {
		timeout = w.backgroundMax()
	}
	if a.Timeout > 0 {
		limit, key := w.cfg.Bash.MaxTimeout, "max_timeout"
		if a.RunInBackground {
			limit, key = w.backgroundMax(), "background_max"
		}
		// Compared in milliseconds: 2^60 ms as nanoseconds wraps negative.
		if a.Timeout > limit.Milliseconds() {
			hint := "or use run_in_background: true"
			if a.RunInBackground {
				hint = "or leave timeout out to run up to bash." + key
			}
			return toolcall.Errorf("Bash: timeout %d ms is over this workspace's maximum of %d ms (bash.%s); ask for at most that, %s",
				a.Timeout, limit.Milliseconds(), key, hint)
		}
		timeout = time.Duration(a.Timeout) * time.Millisecond
	}
	if a.RunInBackground {
		if !w.admitBackground() {
			return toolcall.Errorf("Bash: %d background shells are running already: %s; stop one with KillShell or wait for one to finish, then start this one",
				maxBackgroundShells, w.shellList())
		}
		s, err := w.spawn(a.Command)
		if err != nil {
			w.mu.Lock()
			w.background--
			w.mu.Unlock()
			return toolcall.Errorf("Bash could not start the command: %v", err)
		}
		s.owner = sessionOf(ctx)
		s.background = true
		w.track(s)
		go func() {
			t := time.NewTimer(timeout)
			defer t.Stop()
			select {
			case <-s.done:
			case <-t.C:
				reason := fmt.Sprintf("ran past its timeout (%s)", timeout)
				if a.Timeout == 0 {
					reason = fmt.Sprintf("ran past bash.background_max (%s)", timeout)
				}
				s.killFor(reason)
			}
		}()
		return toolcall.Text(fmt.Sprintf("Command running in the background with bash_id %s. Read its output with BashOutput {\"bash_id\": %q}; stop it with KillShell {\"shell_id\": %q}.", s.id, s.id, s.id))
	}
	out, code, status, err := w.run(ctx, a.Command, timeout)
	if err != nil {
		return toolcall.Errorf("Bash could not start the command: %v", err)
	}
	res := toolcall.Text(w.shellText(out, status))
	res.IsError = code != 0
	return res
}

// backgroundMax is how long a background shell that names no timeout
// runs.
func (w *Workspace) backgroundMax() time.Duration {
	return cmp.Or(w.cfg.Bash.BackgroundMax, config.DefaultBashBackgroundMax)
}

// shellText is a command's status line first (its exit code, where a
// model looks), then its output within the budget.
func (w *Workspace) shellText(out, status string) string {
	if out == "" {
		out = "(no output)\n"
	} else if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return status + "\n" + w.capText(out)
}

func bashOutputTool(w *Workspace, _ context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		BashID string `json:"bash_id"`
		Filter string `json:"filter"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("BashOutput: %v", err)
	}
	s := w.shell(a.BashID)
	if s == nil {
		return toolcall.Errorf("BashOutput: no shell %q; background shells: %s", a.BashID, w.shellList())
	}
	var re *regexp.Regexp
	if a.Filter != "" {
		var err error
		if re, err = regexp.Compile(a.Filter); err != nil {
			return toolcall.Errorf("BashOutput: filter is not a valid RE2 regular expression: %v", err)
		}
	}
	finished := s.finished() // before reading: output written before the end is all there
	text, more, lost := s.take(re, w.room(200), finished)
	if lost > 0 {
		text = fmt.Sprintf("[%d earlier bytes were dropped: a shell keeps its newest %d MiB]\n", lost, outBufMax>>20) + text
	}
	if more {
		text += "[more output waiting: call BashOutput again to read on]\n"
	}
	status := "status: running"
	code := 0
	if finished {
		var st string
		code, st = s.status()
		status = "status: finished, " + st
	}
	res := toolcall.Text(w.shellText(text, status))
	res.IsError = finished && code != 0
	return res
}

// take returns the shell's unread output up to budget bytes of whole
// lines (one longer line is cut), keeping only lines re matches when re
// is set, and moves the read offset past what it looked at: what does not
// fit stays unread for the next call. more says output is left; lost
// counts unread bytes the ring dropped.
//
// While the shell runs, a last line without its newline waits for the
// rest unless it is all there is (a prompt), so a line is not split
// across reads.
func (s *shell) take(re *regexp.Regexp, budget int, finished bool) (text string, more bool, lost int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, total, lost := s.out.since(s.read)
	start := total - len(all)
	var b strings.Builder
	used := 0
	for used < len(all) {
		line := all[used:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		} else if !finished && used > 0 {
			break
		}
		keep := re == nil || re.MatchString(strings.TrimRight(line, "\r\n"))
		if keep && b.Len()+len(line) > budget {
			if b.Len() > 0 {
				break
			}
			line = textcut.Prefix(line, budget) // one line over the whole budget
		}
		if keep {
			b.WriteString(line)
		}
		used += len(line)
	}
	s.read = start + used
	return b.String(), used < len(all), lost
}

// allRead reports whether BashOutput has returned all the shell's output.
func (s *shell) allRead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read >= s.out.written()
}

func killShellTool(w *Workspace, _ context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		ShellID string `json:"shell_id"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("KillShell: %v", err)
	}
	s := w.shell(a.ShellID)
	if s == nil {
		return toolcall.Errorf("KillShell: no shell %q; running shells: %s", a.ShellID, w.shellList())
	}
	if s.finished() {
		_, st := s.status()
		return toolcall.Text(fmt.Sprintf("Shell %s had already finished (%s); its output stays readable with BashOutput", a.ShellID, st))
	}
	s.killFor("killed with KillShell")
	<-s.done
	return toolcall.Text(fmt.Sprintf("Shell %s killed; its unread output stays readable with BashOutput {\"bash_id\": %q}", a.ShellID, a.ShellID))
}

func (w *Workspace) shell(id string) *shell {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.shells[id]
}

// shellList names the tracked shells for error messages.
func (w *Workspace) shellList() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.shells) == 0 {
		return "none"
	}
	list := slices.SortedFunc(maps.Values(w.shells), func(a, b *shell) int { return a.seq - b.seq })
	var ids []string
	for _, s := range list {
		state := "running"
		if s.finished() {
			state = "finished"
		}
		ids = append(ids, fmt.Sprintf("%s (%s, %q)", s.id, state, cut(s.command, 60)))
	}
	return strings.Join(ids, ", ")
}

// cut shortens s to n bytes and marks the cut, never inside a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}

type sessionKey struct{}

// WithSession records in ctx the client session a tool call comes from,
// so a background shell it starts ends with that session.
func WithSession(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, id)
}

func sessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// EndSession kills the background shells the client session id started:
// the client that could read or kill them is gone.
func (w *Workspace) EndSession(id string) {
	if id == "" {
		return
	}
	w.mu.Lock()
	var ended []*shell
	for _, s := range w.shells {
		if s.owner == id {
			ended = append(ended, s)
		}
	}
	w.mu.Unlock()
	for _, s := range ended {
		s.killFor("the client session that started it ended")
	}
}
