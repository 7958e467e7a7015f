//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
)

// Outside Linux there is neither cgroup v2 nor an enforced RLIMIT_AS
// (macOS ignores it): workers still isolate runs from each other and from
// kiln, and deadlines still kill them, but memory is bounded only by
// debug.SetMemoryLimit and the heap watchdog inside each worker.

type cgroupParent struct{}

type cgroupChild struct{ fd *os.File }

var errNoCgroup = errors.New("cgroup v2 exists only on Linux")

func findCgroup() (*cgroupParent, error) { return nil, errNoCgroup }

func (c *cgroupParent) newChild(string, int64) (*cgroupChild, error) { return nil, errNoCgroup }

func (c *cgroupChild) oomKilled() bool { return false }

func (c *cgroupChild) remove() {}

func workerSysProcAttr(*exec.Cmd, *cgroupChild) {}

func limitAddressSpace(int64) error { return nil }

func vmSize() int64 { return 0 }

func vmData() int64 { return 0 }

func limitData(int64) error { return nil }

func procStatusKB(string, string) int64 { return 0 }

const rlimitSupported = false

func smallThreadStacks() error { return nil }
