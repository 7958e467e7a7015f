//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procRoot and the cgroup files are read through these paths so tests can
// point them at a fake tree; the kernel's are the defaults.
var (
	procSelfCgroup    = "/proc/self/cgroup"
	procSelfMountinfo = "/proc/self/mountinfo"
)

// cgroupParent is kiln's own cgroup v2 directory when kiln may create
// children in it with the memory controller enabled.
type cgroupParent struct{ dir string }

// findCgroup returns kiln's cgroup v2 directory if workers can get a
// memory.max there: cgroup v2 is mounted, kiln's group offers the memory
// controller to its children (enabling it when it may), and kiln can
// create a child. The error says which step failed, for the start log.
func findCgroup() (*cgroupParent, error) {
	rel, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	mount, root, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	rest, ok := strings.CutPrefix(rel, root)
	if !ok {
		return nil, fmt.Errorf("kiln's cgroup %s lies outside the cgroup2 mount's root %s", rel, root)
	}
	dir := filepath.Join(mount, rest)
	ctrls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(strings.Fields(string(ctrls)), "memory") {
		return nil, fmt.Errorf("the memory controller is not available in %s", dir)
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(strings.Fields(string(sub)), "memory") {
		// Refused (EBUSY) when kiln's group holds processes and is not the
		// root: cgroup v2 has no controllers for groups with inner processes.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			return nil, fmt.Errorf("enable the memory controller in %s: %w", dir, err)
		}
	}
	probe := filepath.Join(dir, fmt.Sprintf("kiln-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return nil, fmt.Errorf("create a cgroup: %w", err)
	}
	_, statErr := os.Stat(filepath.Join(probe, "memory.max"))
	_ = os.Remove(probe)
	if statErr != nil {
		return nil, fmt.Errorf("a new cgroup in %s has no memory.max: %w", dir, statErr)
	}
	return &cgroupParent{dir: dir}, nil
}

// ownCgroup reads the cgroup v2 path ("0::/path") of this process.
func ownCgroup() (string, error) {
	b, err := os.ReadFile(procSelfCgroup)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 hierarchy")
}

// cgroup2Mount finds where the cgroup2 filesystem is mounted and which of
// its directories that mount shows as its root.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open(procSelfMountinfo)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 {
			return fields[4], fields[3], nil
		}
	}
	return "", "", errors.New("cgroup v2 is not mounted")
}

// cgroupChild is one worker's cgroup.
type cgroupChild struct {
	dir string
	fd  *os.File
}

// newChild creates a cgroup capped at max bytes, without swap.
func (c *cgroupParent) newChild(name string, max int64) (*cgroupChild, error) {
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fail := func(err error) (*cgroupChild, error) {
		_ = os.Remove(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(max, 10)), 0); err != nil {
		return fail(fmt.Errorf("set memory.max: %w", err))
	}
	// Without swap limits, a worker past memory.max swaps instead of dying.
	if err := os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(fmt.Errorf("set memory.swap.max: %w", err))
	}
	fd, err := os.Open(dir)
	if err != nil {
		return fail(err)
	}
	return &cgroupChild{dir: dir, fd: fd}, nil
}

// oomKilled reports whether the kernel killed a process of the group for
// passing memory.max.
func (c *cgroupChild) oomKilled() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove deletes the group once its process has exited.
func (c *cgroupChild) remove() {
	_ = c.fd.Close()
	_ = os.Remove(c.dir)
}

// workerSysProcAttr kills the worker with kiln and, with a cgroup, starts
// it inside the group (clone3 CLONE_INTO_CGROUP), so no allocation of the
// worker escapes the limit.
func workerSysProcAttr(cmd *exec.Cmd, cg *cgroupChild) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cg.fd.Fd())
	}
}

// limitAddressSpace sets RLIMIT_AS on this process: past it, mmap fails
// and the Go runtime exits with "out of memory".
func limitAddressSpace(n int64) error {
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(n), Max: uint64(n)})
}

// limitData sets RLIMIT_DATA, which since Linux 4.7 counts private
// writable mappings: the Go heap as it is really mapped, in 4 MiB steps,
// without the PROT_NONE reservations (64 MiB arenas, about 1.2 GiB at
// idle) that make RLIMIT_AS lumpy.
func limitData(n int64) error {
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: uint64(n), Max: uint64(n)})
}

// vmSize returns this process's address-space size (VmSize), 0 if unknown.
func vmSize() int64 { return procStatusKB("/proc/self/status", "VmSize:") }

// vmData returns this process's data size (VmData), 0 if unknown.
func vmData() int64 { return procStatusKB("/proc/self/status", "VmData:") }

// procStatusKB reads one "Name: N kB" line of a /proc status file in bytes.
func procStatusKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

const rlimitSupported = true

// workerStackEnv marks a worker that already re-executed itself with small
// thread stacks.
const workerStackEnv = "KILN_SANDBOX_WORKER_STACK"

// threadStack is the pthread stack size a cgo-built worker runs with.
const threadStack = 1 << 20

// smallThreadStacks makes a cgo-built worker's threads reserve 1 MiB of
// stack instead of 8: glibc sizes pthread stacks from RLIMIT_STACK as read
// at process start, so the worker lowers it and executes itself again,
// before reading anything. Every reservation counts under RLIMIT_AS, and
// the heap could use whatever room was left for stacks.
func smallThreadStacks() error {
	if threadSlack == 0 || os.Getenv(workerStackEnv) != "" {
		return nil
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &cur); err != nil {
		return err
	}
	if cur.Cur <= threadStack {
		return nil
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &syscall.Rlimit{Cur: threadStack, Max: cur.Max}); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(self, os.Args, append(os.Environ(), workerStackEnv+"=1"))
}
