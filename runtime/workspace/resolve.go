package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// maxPathLen bounds a path argument; the kernel's own limit (PATH_MAX).
const maxPathLen = 4096

// ErrOutside is returned for a path that leads outside the root.
var ErrOutside = errors.New("outside the workspace root")

// Root is a workspace folder, canonicalised once, and the file
// descriptor every open is made beneath.
type Root struct {
	dir string // absolute, symlinks resolved
	fd  int    // O_PATH descriptor of dir
	// beneath is false on kernels without openat2; opens then walk
	// component by component with O_NOFOLLOW.
	beneath bool
}

// OpenRoot canonicalises dir and holds it open.
func OpenRoot(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", dir, err)
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", real, err)
	}
	r := &Root{dir: real, fd: fd, beneath: true}
	probe, err := unix.Openat2(fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if errors.Is(err, unix.ENOSYS) {
		r.beneath = false
	} else if err == nil {
		unix.Close(probe)
	}
	return r, nil
}

// Dir is the canonical root folder.
func (r *Root) Dir() string { return r.dir }

// Close releases the root's descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// PathError says what was refused and why, in words a model can act on.
// It names only the path the caller gave, never anything read outside.
type PathError struct {
	Path   string
	Reason string
	Err    error
}

func (e *PathError) Error() string {
	// Never "path: reason": the scrubber reads "/etc/passwd": … as a
	// password assignment and would hide the reason.
	return fmt.Sprintf("%s (%s)", quotePath(e.Path), e.Reason)
}

func (e *PathError) Unwrap() error { return e.Err }

// quotePath quotes a path for a message, escaping bytes that are not
// UTF-8 and cutting very long ones.
func quotePath(p string) string {
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	if !utf8.ValidString(p) {
		return fmt.Sprintf("%+q", p)
	}
	return fmt.Sprintf("%q", p)
}

// Resolve checks p and returns it relative to the root ("." for the root
// itself). Relative paths are joined to the root; absolute ones must lie
// inside it. Symlinks among the components that exist are followed and
// the result must still be inside. This is the early, friendly check: the
// opens themselves are made beneath the root as well.
func (r *Root) Resolve(p string) (string, error) {
	rel, _, err := r.resolve(p)
	return rel, err
}

// resolveTarget is Resolve with the symlinks that exist on the path
// resolved (all inside the root, as Resolve checked): Write and Edit then
// change a link's target instead of replacing the link with a copy, and
// a link with an absolute target inside is opened as that target, which
// openat2's RESOLVE_BENEATH refuses as a link, wherever it points.
func (r *Root) resolveTarget(p string) (string, error) {
	_, target, err := r.resolve(p)
	return target, err
}

// resolve returns p relative to the root as written and with its
// existing symlinks resolved.
func (r *Root) resolve(p string) (rel, target string, err error) {
	switch {
	case p == "":
		return "", "", &PathError{Path: p, Reason: "empty path; give a file path relative to the workspace root or absolute inside " + r.dir}
	case strings.IndexByte(p, 0) >= 0:
		return "", "", &PathError{Path: p, Reason: "contains a NUL byte, which no file name can hold", Err: ErrOutside}
	case len(p) > maxPathLen:
		return "", "", &PathError{Path: p, Reason: fmt.Sprintf("path is %d bytes, longer than the %d the system allows", len(p), maxPathLen)}
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.dir, abs)
	}
	abs = filepath.Clean(abs)
	rel, ok := r.inside(abs)
	if !ok {
		return "", "", r.outside(p)
	}
	// Walk symlinks through the components that exist.
	real, err := r.evalExisting(rel)
	if err != nil {
		return "", "", err
	}
	target, ok = r.inside(real)
	if !ok {
		return "", "", &PathError{Path: p, Reason: "a symlink on this path leads outside the workspace root " + r.dir + "; refused", Err: ErrOutside}
	}
	return rel, target, nil
}

func (r *Root) outside(p string) error {
	return &PathError{Path: p, Reason: "outside the workspace root " + r.dir + "; use a path inside it", Err: ErrOutside}
}

// inside reports whether abs (clean) is the root or below it, and returns
// it relative to the root.
func (r *Root) inside(abs string) (string, bool) {
	if abs == r.dir {
		return ".", true
	}
	rel, ok := strings.CutPrefix(abs, r.dir+string(filepath.Separator))
	if r.dir == "/" {
		rel, ok = strings.TrimPrefix(abs, "/"), true
	}
	return rel, ok
}

// evalExisting resolves symlinks along rel as far as components exist and
// returns the absolute result; the missing tail is appended unresolved.
func (r *Root) evalExisting(rel string) (string, error) {
	if rel == "." {
		return r.dir, nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := r.dir
	for i, part := range parts {
		next := filepath.Join(cur, part)
		real, err := filepath.EvalSymlinks(next)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// A dangling symlink must not be written through either.
				if fi, lerr := os.Lstat(next); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
					target, _ := os.Readlink(next)
					if !filepath.IsAbs(target) {
						target = filepath.Join(cur, target)
					}
					if _, ok := r.inside(filepath.Clean(target)); !ok {
						return "", &PathError{Path: rel, Reason: "a symlink on this path leads outside the workspace root; refused", Err: ErrOutside}
					}
				}
				return filepath.Join(append([]string{cur}, parts[i:]...)...), nil
			}
			if errors.Is(err, unix.ELOOP) || strings.Contains(err.Error(), "too many links") {
				return "", &PathError{Path: rel, Reason: "symlink loop; refused", Err: unix.ELOOP}
			}
			if errors.Is(err, unix.ENOTDIR) {
				return filepath.Join(append([]string{cur}, parts[i:]...)...), nil
			}
			return "", &PathError{Path: rel, Reason: "cannot resolve: " + errText(err), Err: err}
		}
		if _, ok := r.inside(real); !ok {
			return "", &PathError{Path: rel, Reason: "a symlink on this path leads outside the workspace root " + r.dir + "; refused", Err: ErrOutside}
		}
		cur = real
	}
	return cur, nil
}

// errText is an OS error without the path the os package puts in front,
// which could name a resolved target outside the root.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// openBeneath opens rel beneath the root: the kernel refuses any
// resolution that leaves it, whatever was swapped in since Resolve.
func (r *Root) openBeneath(rel string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if r.beneath {
		for {
			fd, err := unix.Openat2(r.fd, rel, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode),
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
			if err == unix.EAGAIN || err == unix.EINTR {
				continue // a concurrent rename; the kernel asks to retry
			}
			return fd, mapBeneath(err)
		}
	}
	return r.walkNoFollow(rel, flags, mode)
}

// mapBeneath turns the kernel's refusal of an escape into ErrOutside.
func mapBeneath(err error) error {
	if err == unix.EXDEV {
		return fmt.Errorf("%w (a symlink or .. on the way left it)", ErrOutside)
	}
	return err
}

// walkNoFollow opens rel one component at a time with O_NOFOLLOW, for
// kernels without openat2: every symlink is refused, even inside.
func (r *Root) walkNoFollow(rel string, flags int, mode uint32) (int, error) {
	parts := strings.Split(filepath.Clean(rel), string(filepath.Separator))
	dir, err := unix.FcntlInt(uintptr(r.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, part := range parts {
		if part == ".." {
			unix.Close(dir)
			return -1, ErrOutside
		}
		last := i == len(parts)-1
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			f = flags | unix.O_NOFOLLOW
		}
		next, err := unix.Openat(dir, part, f, mode)
		unix.Close(dir)
		if err == unix.ELOOP {
			return -1, fmt.Errorf("%w (symlinks are not followed on this kernel)", ErrOutside)
		}
		if err != nil {
			return -1, err
		}
		dir = next
	}
	return dir, nil
}

// open opens rel beneath the root as an *os.File.
func (r *Root) open(rel string, flags int, mode uint32) (*os.File, error) {
	fd, err := r.openBeneath(rel, flags, mode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.dir, rel)), nil
}

// OpenRead opens p (a file or a folder) for reading the way the file
// tools do: checked by Resolve, then opened beneath the root, so neither a
// path nor a symlink swapped in meanwhile reaches outside. It returns the
// file and p relative to the root. The console's workspace browser uses it.
func (r *Root) OpenRead(p string) (*os.File, string, error) {
	rel, target, err := r.resolve(p)
	if err != nil {
		return nil, "", err
	}
	f, err := r.open(target, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", &PathError{Path: p, Reason: errText(err), Err: err}
	}
	return f, rel, nil
}
