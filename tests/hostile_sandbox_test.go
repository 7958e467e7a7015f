//go:build e2e

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Memory bombs: native work goja cannot interrupt (string concatenation,
// array growth, JSON, repeat, regex), each run alone past a 50 MiB budget.
var memoryBombs = []struct{ name, code string }{
	{"string doubling", `let s='x'; for (let i=0;i<40;i++) s=s+s; return s.length;`},
	{"array growth", `const a = []; for (let i = 0; ; i++) a.push({i, s: "y" + i}); return a.length`},
	{"JSON.stringify of a huge structure", `const a = []; for (let i = 0; i < 2e6; i++) a.push({k: "v".repeat(64) + i}); return JSON.stringify(a).length`},
	{"string repeat", `const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length)`},
	{"regex growth", `let s = "ab".repeat(1 << 18); for (;;) s = s.replace(/a/g, "aa")`},
}

const (
	// sandboxBudget is gateway.sandbox.memory (the default).
	sandboxBudget = 50 << 20
	// workerOverhead is what a worker may hold beyond the budget: its idle
	// resident memory (~22 MiB measured) and the collector's headroom
	// under RLIMIT_DATA (measured peaks: about budget + 30 MiB per worker).
	workerOverhead = 100 << 20
	// abortTreeRSS stops the attack before it can hurt the machine: kiln
	// builds without workers went past 12 GB.
	abortTreeRSS = 3 << 30
)

// TestHostileSandboxMemory runs 8 concurrent memory bombs against kiln
// serve --http, the case (8 × string doubling) and then a mix of
// variants: each gets a memory or timeout error, the RSS of kiln's process
// tree stays under 8 × budget plus a fixed overhead, another client's echo
// succeeds meanwhile, and the next run is normal.
func TestHostileSandboxMemory(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: "  sandbox:\n    memory: 50MiB\n    max_concurrent: 8"})
	url := startHTTP(t, "--config", cfg)
	kiln := childNamed(t, "kiln")
	other := newMCPGoHTTP(t, url)
	callReady(t, other, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "warm"}))
	baseline := treeRSS(kiln)
	t.Logf("kiln process tree at rest: %d MiB (kiln, server-everything, idle workers)", baseline>>20)
	sessions := make([]session, 8)
	for i := range sessions {
		sessions[i] = newMCPGoHTTP(t, url)
	}
	t.Run("8 × string doubling", func(t *testing.T) {
		attack(t, kiln, baseline, other, sessions, memoryBombs[:1])
	})
	t.Run("mixed variants", func(t *testing.T) {
		attack(t, kiln, baseline, other, sessions, memoryBombs)
	})
	// The next run is normal.
	r := callReady(t, other, "call_tool_chain", chainTS(`const a = await everything.echo({message: "after"}); return a;`))
	if r.IsError || !strings.Contains(r.Text(), "after") {
		t.Errorf("run after the attack: %s", r.Text())
	}
}

// attack sends bombs[i % len] from each session at once and checks the
// outcome, the memory of kiln's tree and another client's service.
func attack(t *testing.T, kiln int, baseline int64, other session, sessions []session, bombs []struct{ name, code string }) {
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			rss := treeRSS(kiln)
			if rss > peak.Load() {
				peak.Store(rss)
			}
			if rss > abortTreeRSS {
				killTree(kiln)
				t.Errorf("kiln's process tree reached %d MiB; killed it", rss>>20)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	results := make([]result, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			results[i], errs[i] = s.Call(t.Context(), "call_tool_chain", map[string]any{"code": bombs[i%len(bombs)].code, "timeout": 20000})
		})
	}
	// Another client is served meanwhile.
	echoes, slowest := 0, time.Duration(0)
	for done := false; !done; {
		start := time.Now()
		r, err := other.Call(t.Context(), "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "still here"}))
		if err != nil || r.IsError || !strings.Contains(r.Text(), "still here") {
			t.Fatalf("echo from another session during the attack: %v %s", err, r.Text())
		}
		echoes++
		slowest = max(slowest, time.Since(start))
		select {
		case <-waitChan(&wg):
			done = true
		default:
		}
	}
	close(stop)
	sampler.Wait()
	bound := int64(8*sandboxBudget) + baseline + 8*workerOverhead
	// The slowest echo is reported, not asserted: no timing assertions.
	t.Logf("peak RSS of kiln's process tree during the attack: %d MiB (bound %d MiB = 8 × %d MiB budget + %d MiB at rest + 8 × %d MiB per worker); %d echoes served meanwhile, the slowest in %v",
		peak.Load()>>20, bound>>20, sandboxBudget>>20, baseline>>20, workerOverhead>>20, echoes, slowest.Round(time.Millisecond))
	for i, r := range results {
		name := bombs[i%len(bombs)].name
		if errs[i] != nil {
			t.Errorf("%s: %v", name, errs[i])
			continue
		}
		t.Logf("%-36s %s", name, firstLine(r.Text()))
		if !r.IsError || !(strings.Contains(r.Text(), "memory budget") || strings.Contains(r.Text(), "did not finish within")) {
			t.Errorf("%s: isError=%v %q, want a memory or timeout error", name, r.IsError, firstLine(r.Text()))
		}
	}
	if peak.Load() > bound {
		t.Errorf("kiln's process tree peaked at %d MiB, over %d MiB", peak.Load()>>20, bound>>20)
	}
}

// TestHostileSandboxNativeDeadline: a native sort that goja cannot
// interrupt ends with a timeout error and its worker is killed.
func TestHostileSandboxNativeDeadline(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true})
	url := startHTTP(t, "--config", cfg)
	kiln := childNamed(t, "kiln")
	s := newMCPGoHTTP(t, url)
	callReady(t, s, "call_tool_chain", chainTS(`await everything.echo({message: "warm"}); return 1`))
	before := workers(kiln)
	if len(before) == 0 {
		t.Fatal("kiln serve runs no sandbox-worker process")
	}
	r, err := s.Call(t.Context(), "call_tool_chain", map[string]any{"timeout": 300,
		"code": `const a = "zyxwvutsrqponmlkjihgfedcba9876543210".repeat(1.5e4).split(""); a.sort(); return a.length`})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), "did not finish within 300ms") {
		t.Fatalf("native sort past its deadline: isError=%v %s", r.IsError, r.Text())
	}
	eventually(t, "the worker that ran the sort is gone", func() bool {
		now := map[int]bool{}
		for _, p := range workers(kiln) {
			now[p] = true
		}
		for _, p := range before {
			if !now[p] {
				return true
			}
		}
		return false
	})
	r = callReady(t, s, "call_tool_chain", chainTS(`const a = await everything.echo({message: "next"}); return a;`))
	if r.IsError || !strings.Contains(r.Text(), "next") {
		t.Errorf("run after the kill: %s", r.Text())
	}
}

func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// childNamed returns the pid of this test's child process with that name
// (startHTTP's kiln).
func childNamed(t *testing.T, name string) int {
	t.Helper()
	var pid int
	eventually(t, "find the "+name+" process", func() bool {
		for _, p := range children(os.Getpid()) {
			if comm(p) == name {
				pid = p
				return true
			}
		}
		return false
	})
	return pid
}

// children lists the pids whose parent is ppid, from /proc.
func children(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children(out[i])...)
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// workers lists kiln's sandbox-worker processes.
func workers(kiln int) []int {
	var out []int
	for _, p := range children(kiln) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if strings.Contains(string(b), "sandbox-worker") {
			out = append(out, p)
		}
	}
	return out
}

// treeRSS sums VmRSS over pid and its descendants.
func treeRSS(pid int) int64 {
	var sum int64
	for _, p := range descendants(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				sum += n << 10
			}
		}
	}
	return sum
}

func killTree(pid int) {
	for _, p := range descendants(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}
