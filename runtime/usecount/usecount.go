package usecount

import (
	"context"
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
	// counts' keys are replaced, never modified, so Boost (called for
	// every matching tool of every search) reads it without a lock; Record
	// adds to a tool's counter, and copies the map only for a tool it has
	// not seen (copying it on every call cost each call time in proportion
	// to the tools ever used).
	counts atomic.Pointer[map[string]*atomic.Uint64]
	mu     sync.Mutex // serialises Record and Save
	dirty  bool
	// shared, when set, holds the counts instead of path; pending are the
	// uses recorded since they were last sent.
	shared  Store
	pending map[string]uint64
}

// Store shares counts between kiln replicas (gateway.state_url): Add
// adds one replica's new counts and returns every replica's totals.
type Store interface {
	Add(ctx context.Context, delta map[string]uint64) (map[string]uint64, error)
}

// OpenShared keeps the counts in s; each Save sends the uses recorded
// since the last one and takes the fleet's totals back.
func OpenShared(ctx context.Context, s Store) (*Counts, error) {
	u := &Counts{shared: s, pending: map[string]uint64{}}
	totals, err := s.Add(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	u.store(totals)
	return u, nil
}

// store makes totals the counts.
func (u *Counts) store(totals map[string]uint64) {
	m := make(map[string]*atomic.Uint64, len(totals))
	for id, n := range totals {
		m[id] = new(atomic.Uint64)
		m[id].Store(n)
	}
	u.counts.Store(&m)
}

// snapshot returns the counts as plain numbers.
func (u *Counts) snapshot() map[string]uint64 {
	m := *u.counts.Load()
	out := make(map[string]uint64, len(m))
	for id, n := range m {
		out[id] = n.Load()
	}
	return out
}

type usageFile struct {
	Version int               `json:"version"`
	Counts  map[string]uint64 `json:"counts"`
}

// Open loads the counts stored at path; a missing file starts empty.
// An empty path keeps counts in memory only.
func Open(path string) (*Counts, error) {
	u := &Counts{path: path}
	u.store(nil)
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
	u.store(f.Counts)
	return u, nil
}

// Record counts one use of the tool id ("backend.tool").
func (u *Counts) Record(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if n := (*u.counts.Load())[id]; n != nil {
		n.Add(1)
	} else {
		next := maps.Clone(*u.counts.Load())
		next[id] = new(atomic.Uint64)
		next[id].Store(1)
		u.counts.Store(&next)
	}
	u.dirty = true
	if u.shared != nil {
		u.pending[id]++
	}
}

// Count returns how often id was recorded.
func (u *Counts) Count(id string) uint64 {
	if n := (*u.counts.Load())[id]; n != nil {
		return n.Load()
	}
	return 0
}

// Boost returns 1 + 0.3·ln(1+uses): the logarithm keeps one heavily used
// tool from burying better matches.
func (u *Counts) Boost(id string) float64 {
	return 1 + 0.3*math.Log1p(float64(u.Count(id)))
}

// Save writes the counts if they changed since the last Save, through a
// temporary file and a rename in the same folder.
func (u *Counts) Save() error {
	if u.shared != nil {
		return u.saveShared()
	}
	if u.path == "" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.dirty {
		return nil
	}
	raw, err := json.Marshal(usageFile{Version: usageVersion, Counts: u.snapshot()})
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if err := atomicfile.Write(u.path, append(raw, '\n')); err != nil {
		return fmt.Errorf("usage: save %s: %w", u.path, err)
	}
	u.dirty = false
	return nil
}

// saveShared sends the pending uses without holding the lock across the
// round trip (Record is on every call's path), then keeps the fleet's
// totals plus what was recorded meanwhile. Uses that could not be sent
// stay pending for the next Save.
func (u *Counts) saveShared() error {
	u.mu.Lock()
	sent := u.pending
	u.pending = map[string]uint64{}
	u.mu.Unlock()
	totals, err := u.shared.Add(context.Background(), sent)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		for id, n := range sent {
			u.pending[id] += n
		}
		return fmt.Errorf("usage: %w", err)
	}
	for id, n := range u.pending {
		totals[id] += n
	}
	u.store(totals)
	return nil
}
