//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindCgroup checks how kiln decides whether workers get a cgroup v2
// memory.max. The kernel's files are replaced by a fake tree: this machine
// runs cgroup v1 for memory, and a test must not reconfigure the host's
// cgroups. The kernel-backed path (clone3 into the group, memory.events)
// is exercised wherever kiln runs with cgroup v2 delegation.
func TestFindCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, cgroup, mountinfo string
		controllers, subtree    string
		says                    string // "" means found
	}{
		{"no v2 line", "4:memory:/x\n", "", "", "", "no cgroup v2 hierarchy"},
		{"v2 not mounted", "0::/kiln.scope\n", "41 31 0:38 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "", "", "cgroup v2 is not mounted"},
		{"no memory controller", "0::/kiln.scope\n", "41 31 0:38 / MOUNT rw,relatime - cgroup2 cgroup2 rw\n", "cpu io", "", "memory controller is not available"},
		{"controller offered, probe lacks memory.max", "0::/kiln.scope\n", "41 31 0:38 / MOUNT rw,relatime - cgroup2 cgroup2 rw\n", "cpu memory", "memory", "has no memory.max"},
		{"outside the mount's root", "0::/other/kiln.scope\n", "41 31 0:38 /mine MOUNT rw - cgroup2 cgroup2 rw\n", "memory", "memory", "outside the cgroup2 mount's root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mount := filepath.Join(dir, "sys")
			group := filepath.Join(mount, "kiln.scope")
			if err := os.MkdirAll(group, 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(path, s string) {
				if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(group, "cgroup.controllers"), tc.controllers)
			write(filepath.Join(group, "cgroup.subtree_control"), tc.subtree)
			procSelfCgroup, procSelfMountinfo = filepath.Join(dir, "cgroup"), filepath.Join(dir, "mountinfo")
			t.Cleanup(func() { procSelfCgroup, procSelfMountinfo = "/proc/self/cgroup", "/proc/self/mountinfo" })
			write(procSelfCgroup, tc.cgroup)
			write(procSelfMountinfo, strings.ReplaceAll(tc.mountinfo, "MOUNT", mount))
			cg, err := findCgroup()
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("findCgroup() = %v, %v; want an error saying %q", cg, err, tc.says)
			}
			// Nothing is left behind.
			ents, _ := os.ReadDir(group)
			for _, e := range ents {
				if e.IsDir() {
					t.Errorf("left %s behind", e.Name())
				}
			}
		})
	}
}

// TestCgroupChild: a worker's group gets memory.max and no swap, and goes
// away with remove.
func TestCgroupChild(t *testing.T) {
	parent := &cgroupParent{dir: t.TempDir()}
	c, err := parent.newChild("kiln-1-w1", 114<<20)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"memory.max": "119537664", "memory.swap.max": "0"} {
		b, err := os.ReadFile(filepath.Join(c.dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if err := os.WriteFile(filepath.Join(c.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !c.oomKilled() {
		t.Error("oomKilled() = false with oom_kill 1")
	}
	for _, f := range []string{"memory.max", "memory.swap.max", "memory.events"} {
		os.Remove(filepath.Join(c.dir, f)) // the kernel's files vanish with the group
	}
	c.remove()
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("the group is still there: %v", err)
	}
}
