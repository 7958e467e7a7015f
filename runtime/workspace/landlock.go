package workspace

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is applied with raw system calls on the one thread that then
// execs bash, rather than with go-landlock: its all-threads restriction
// (psx) hangs in a cgo binary whose process is PID 1 of a new PID
// namespace, which is where the command runs. A thread-local domain is
// enough because execve keeps only the calling thread, and its domain.

// Access rights by the ABI version that introduced them.
const (
	fsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fsRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fsFileRights are the rights that apply to a file (not a folder).
	fsFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// kernelABI returns the running kernel's Landlock ABI, 0 without one.
func kernelABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// restrict applies Landlock to the calling thread, which it locks: the
// root (read-write unless readonly) and the private folders read-write,
// system folders read-only, nothing else; without network, no TCP bind or
// connect; and no signals or abstract sockets to processes outside.
func restrict(spec execSpec) error {
	runtime.LockOSThread() // never unlocked: bash is exec'd from this thread
	abi := kernelABI()
	if abi < 1 {
		return errors.New("the kernel has no Landlock")
	}
	handled := uint64(fsV1)
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		handled |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	attr := unix.LandlockRulesetAttr{Access_fs: handled}
	size := unsafe.Sizeof(attr.Access_fs)
	if abi >= 4 {
		size += unsafe.Sizeof(attr.Access_net)
		if !spec.Network {
			attr.Access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if abi >= 6 {
		size += unsafe.Sizeof(attr.Scoped)
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, access uint64, optional bool) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if optional {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= fsFileRights
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access & handled, Parent_fd: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("rule for %s: %w", path, errno)
		}
		return nil
	}
	rootAccess := handled
	if spec.ReadOnly {
		rootAccess = fsRead
	}
	if err := add(spec.Root, rootAccess, false); err != nil {
		return err
	}
	for _, p := range spec.RW {
		if err := add(p, handled, false); err != nil {
			return err
		}
	}
	for _, p := range spec.RO {
		if err := add(p, fsRead, true); err != nil {
			return err
		}
	}
	for _, p := range spec.ROFiles {
		if err := add(p, fsRead, true); err != nil {
			return err
		}
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		if err := add(p, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_TRUNCATE, true); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}
