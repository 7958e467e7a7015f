package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
)

// debugKnobs is the one table of KILNDEBUG=k=v[,k=v] settings: knobs for
// people measuring kiln, never needed to run it.
var debugKnobs = map[string]string{
	"cpuprofile": "write a CPU profile of kiln serve to this file when it exits",
	"memprofile": "write an allocation profile of kiln serve to this file when it exits",
	"trace":      "write a runtime execution trace of kiln serve to this file (go tool trace -pprof=sched FILE: where goroutines waited to run)",
}

// parseDebug reads KILNDEBUG; an unknown knob is an error naming the known
// ones, so a typo does not silently measure nothing.
func parseDebug(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		if _, ok := debugKnobs[k]; !ok {
			known := make([]string, 0, len(debugKnobs))
			for n := range debugKnobs {
				known = append(known, n)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("KILNDEBUG: unknown knob %q; known: %s", k, strings.Join(known, ", "))
		}
		out[k] = val
	}
	return out, nil
}

// startProfiles starts what KILNDEBUG asks for and returns the function
// that writes the profiles.
func startProfiles(knobs map[string]string) (stop func(), err error) {
	stop = func() {}
	if path := knobs["cpuprofile"]; path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("KILNDEBUG cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("KILNDEBUG cpuprofile: %w", err)
		}
		stop = func() { pprof.StopCPUProfile(); f.Close() }
	}
	if path := knobs["trace"]; path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("KILNDEBUG trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("KILNDEBUG trace: %w", err)
		}
		before := stop
		stop = func() { before(); trace.Stop(); f.Close() }
	}
	if path := knobs["memprofile"]; path != "" {
		runtime.MemProfileRate = 4096
		cpu := stop
		stop = func() {
			cpu()
			// The profile counts allocations as of the last finished
			// collection: finish one so it holds the whole run.
			runtime.GC()
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}
	return stop, nil
}
