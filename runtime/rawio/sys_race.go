//go:build race

package rawio

import "syscall"

// Under the race detector, reads and writes go through package syscall,
// which tells the detector that a write to a pipe happens before the
// read of its bytes: raw system calls would hide that order and report
// races between goroutines that I/O orders.

func sysRead(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Read(int(fd), p)) }

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Write(int(fd), p)) }

func errno(n int, err error) (int, syscall.Errno) {
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}
