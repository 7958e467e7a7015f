package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kilnmcp/kiln/runtime/config"
)

// ExecCommand is the hidden subcommand of the kiln binary that confines
// itself and then execs bash (see ExecMain).
const ExecCommand = "workspace-exec"

// confinement says how Bash commands are contained on this machine.
type confinement struct {
	landlock bool
	network  bool
	// noNamespaces is set once the kernel refused user namespaces; the
	// network then stays closed through Landlock's TCP rules alone.
	noNamespaces atomic.Bool
}

// landlockABI reports the kernel's Landlock ABI version, 0 without it.
// A variable so a test can play a kernel without Landlock.
var landlockABI = kernelABI

// executable is the binary re-executed as workspace-exec: kiln itself, or
// the test binary, whose TestMain serves the subcommand.
var executable = os.Executable

func detectConfinement(b config.Bash) (*confinement, error) {
	abi := landlockABI()
	if abi < 1 && !b.Unconfined {
		return nil, errors.New("this kernel has no Landlock, so Bash could reach files outside root; " +
			"run kiln on Linux 5.13 or later with Landlock enabled (lsm=…,landlock), or set bash.unconfined: true on this backend to accept an unconfined Bash")
	}
	return &confinement{landlock: !b.Unconfined && abi >= 1, network: b.Network}, nil
}

// execSpec is what the parent hands workspace-exec, as JSON in argv.
type execSpec struct {
	Root     string   `json:"root"`
	ReadOnly bool     `json:"readonly,omitempty"`
	RW       []string `json:"rw"` // besides Root: the private temp folder, the build cache
	RO       []string `json:"ro"` // system folders
	ROFiles  []string `json:"ro_files"`
	Landlock bool     `json:"landlock"`
	Network  bool     `json:"network"`
	Command  string   `json:"command"`
	Env      []string `json:"env"`
	// Reap: without a PID namespace, workspace-exec stays as bash's parent
	// and ends every descendant when bash ends or kiln asks (reap.go).
	Reap bool `json:"reap,omitempty"`
}

// systemDirs are read-only to commands: what running tools needs.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
	"/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/ld.so.conf.d", "/proc", "/sys/devices/system/cpu"}

// systemFiles are single read-only files outside those folders.
var systemFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/mime.types", "/etc/bash.bashrc", "/etc/inputrc",
	"/dev/urandom", "/dev/random",
	// git dies on a system config it may not read ("unable to access
	// '/etc/gitconfig': Permission denied"), and go build with it, asking
	// git for the module's VCS status.
	"/etc/gitconfig", "/etc/gitattributes"}

// goEnv finds the Go toolchain and module cache kiln itself would use, so
// go commands work confined: GOROOT and the module cache read-only, the
// build cache in the workspace's state folder.
func goEnv() (goroot, modcache string) {
	if p, err := exec.LookPath("go"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			goroot = filepath.Dir(filepath.Dir(real))
		}
	}
	modcache = os.Getenv("GOMODCACHE")
	if modcache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			if home, err := os.UserHomeDir(); err == nil {
				gopath = filepath.Join(home, "go")
			}
		}
		if gopath != "" {
			modcache = filepath.Join(strings.Split(gopath, string(filepath.ListSeparator))[0], "pkg", "mod")
		}
	}
	return goroot, modcache
}

// command builds the process for one Bash command; ro are folders it may
// read besides the system's (a tool's install, e.g. render_mermaid's).
func (w *Workspace) command(script string, ro ...string) (*exec.Cmd, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find kiln's own binary to confine the command: %w", err)
	}
	home := filepath.Join(w.tmp, "home")
	cache := filepath.Join(w.cfg.StateDir, "cache")
	for _, d := range []string{home, cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	goroot, modcache := goEnv()
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if goroot != "" {
		path = filepath.Join(goroot, "bin") + ":" + path
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + w.tmp, "LANG=C.UTF-8", "TERM=dumb",
		"GOCACHE=" + filepath.Join(cache, "go-build"), "GOPATH=" + filepath.Join(w.tmp, "gopath"),
		"GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOFLAGS=-modcacherw=false"}
	if modcache != "" {
		env = append(env, "GOMODCACHE="+modcache)
	}
	if !w.cfg.Bash.Network {
		env = append(env, "GOPROXY=off")
	}
	if name, email := config.SplitGitIdentity(w.cfg.Bash.GitIdentity); name != "" {
		env = append(env, "GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email, "GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email)
	}
	roFiles := systemFiles
	if w.cfg.Bash.UserGitConfig {
		// HOME is a private folder: point git at the user's own config,
		// readable and nothing else of their home.
		if home, err := os.UserHomeDir(); err == nil {
			for _, p := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
				if _, err := os.Stat(p); err == nil {
					roFiles = append(slices.Clip(roFiles), p)
					if filepath.Base(p) == ".gitconfig" {
						env = append(env, "GIT_CONFIG_GLOBAL="+p)
					} else if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GIT_CONFIG_GLOBAL=") }) {
						env = append(env, "GIT_CONFIG_GLOBAL="+p)
					}
				}
			}
		}
	}
	for _, name := range w.cfg.Bash.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	namespaces := !w.confine.noNamespaces.Load()
	spec := execSpec{Reap: !namespaces, Root: w.root.dir, ReadOnly: w.cfg.ReadOnly, RW: []string{w.tmp, cache}, RO: systemDirs,
		ROFiles: roFiles, Landlock: w.confine.landlock, Network: w.cfg.Bash.Network, Command: script, Env: env}
	if goroot != "" {
		spec.RO = append(spec.RO, goroot)
	}
	if modcache != "" {
		spec.RO = append(spec.RO, modcache)
	}
	spec.RO = append(slices.Clip(spec.RO), ro...)
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, ExecCommand, string(raw))
	cmd.Env = env
	cmd.Dir = w.root.dir
	cmd.SysProcAttr = w.sysProcAttr(namespaces)
	return cmd, nil
}

// sysProcAttr puts the command in its own process group, kills it when
// kiln dies, and, where the kernel allows, in its own user and PID
// namespaces (so killing its first process kills every descendant, even
// one that left the group) and, without network: true, its own empty
// network namespace.
func (w *Workspace) sysProcAttr(namespaces bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !namespaces {
		// workspace-exec ends the command's processes on SIGTERM; killed
		// outright, it would leave them running after kiln.
		a.Pdeathsig = syscall.SIGTERM
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	if !w.cfg.Bash.Network {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	return a
}

// start starts cmd, retrying without namespaces once when the kernel
// refuses them (user namespaces disabled by sysctl or a container).
func (w *Workspace) start(script string, setup func(*exec.Cmd), ro ...string) (*exec.Cmd, error) {
	cmd, err := w.command(script, ro...)
	if err != nil {
		return nil, err
	}
	setup(cmd)
	err = cmd.Start()
	if err != nil && cmd.SysProcAttr.Cloneflags != 0 &&
		(errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES)) {
		w.log.Warn("user namespaces refused; Bash runs without its own PID and network namespaces (Landlock still applies)", "backend", w.name, "err", err)
		w.confine.noNamespaces.Store(true)
		if cmd, err = w.command(script, ro...); err != nil {
			return nil, err
		}
		setup(cmd)
		err = cmd.Start()
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}
