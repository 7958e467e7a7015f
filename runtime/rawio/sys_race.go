//go:build race

package rawio

import (
	"syscall"
	"unsafe"
)

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

// Sockets are the process's own stdio, whose other end is another
// process: no order inside this one to tell the detector.

func sysRecv(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

func sysSend(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.Syscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
	return int(n), e
}
