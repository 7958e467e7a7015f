package usecount

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
)

// usageVersion is the format of the usage state file.
const usageVersion = 1

// Counts counts successful tool calls and turns them into the search boost
// 1 + 0.3·ln(1+uses), so tools an installation relies on rank first among
// equals. It is safe for concurrent use; Boost is a search.Options.Boost.
//
// Lifecycle: Open → Record/Boost from any goroutine → Save (after
// calls or at shutdown; the file is replaced atomically, so a crash keeps
// the previous counts).
type Counts struct {
	path string
	// counts is replaced, never modified, so Boost (called for every
	// matching tool of every search) reads it without a lock; Record copies
	// it, which costs microseconds next to the tool call it counts.
	counts atomic.Pointer[map[string]uint64]
	mu     sync.Mutex // serialises Record and Save
	dirty  bool
}

type usageFile struct {
	Version int               `json:"version"`
	Counts  map[string]uint64 `json:"counts"`
}

// Open loads the counts stored at path; a missing file starts empty.
// An empty path keeps counts in memory only.
func Open(path string) (*Counts, error) {
	u := &Counts{path: path}
	u.counts.Store(&map[string]uint64{})
	if path == "" {
		return u, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	var f usageFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("usage: %s: %w; delete the file to start counting again", path, err)
	}
	if f.Version != usageVersion {
		return nil, fmt.Errorf("usage: %s: version %d, want %d; delete the file to start counting again", path, f.Version, usageVersion)
	}
	if f.Counts != nil {
		u.counts.Store(&f.Counts)
	}
	return u, nil
}

// Record counts one use of the tool id ("backend.tool").
func (u *Counts) Record(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	next := maps.Clone(*u.counts.Load())
	next[id]++
	u.counts.Store(&next)
	u.dirty = true
}

// Count returns how often id was recorded.
func (u *Counts) Count(id string) uint64 { return (*u.counts.Load())[id] }

// Boost returns 1 + 0.3·ln(1+uses): the logarithm keeps one heavily used
// tool from burying better matches.
func (u *Counts) Boost(id string) float64 {
	return 1 + 0.3*math.Log1p(float64(u.Count(id)))
}

// Save writes the counts if they changed since the last Save, through a
// temporary file and a rename in the same folder.
func (u *Counts) Save() error {
	if u.path == "" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.dirty {
		return nil
	}
	raw, err := json.Marshal(usageFile{Version: usageVersion, Counts: *u.counts.Load()})
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if err := atomicfile.Write(u.path, append(raw, '\n')); err != nil {
		return fmt.Errorf("usage: save %s: %w", u.path, err)
	}
	u.dirty = false
	return nil
}
