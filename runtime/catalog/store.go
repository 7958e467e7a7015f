package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
)

// Store keeps runtime registrations, one JSON record (persisted) per
// backend name, where kiln finds them again: FileStore in
// gateway.state_dir for one kiln, Redis (runtime/state) for a fleet
// behind a load balancer. Create's check-and-write is atomic, so two
// replicas registering one name cannot both succeed.
type Store interface {
	All(ctx context.Context) (map[string][]byte, error)
	Create(ctx context.Context, name string, rec []byte) (bool, error)
	Delete(ctx context.Context, name string) error
}

// Watcher is a Store other processes change: Watch calls changed after
// each change (and on its own schedule, to catch missed notices) until
// ctx ends.
type Watcher interface {
	Watch(ctx context.Context, resync time.Duration, changed func())
}

// Epoched is a shared Store that can lose every record at once (Redis
// restarted without persistence, or flushed). AllWithEpoch is All with an
// ID that changes only then, so Follow tells that loss apart from another
// replica's deregistrations.
type Epoched interface {
	AllWithEpoch(ctx context.Context) (map[string][]byte, string, error)
}

// storeTimeout bounds one store operation made on a client's behalf.
const storeTimeout = 5 * time.Second

// FileStore keeps registrations in one JSON file (an array of records,
// sorted by name), replaced atomically and readable by kiln's user only:
// definitions may hold header tokens.
type FileStore struct {
	path string
	mu   sync.Mutex
}

// NewFileStore returns the store at path, created on first write.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

func (f *FileStore) read() (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%s: %w; delete it to forget the saved registrations", f.path, err)
	}
	out := map[string]json.RawMessage{}
	for _, r := range recs {
		var p struct{ Name string }
		if json.Unmarshal(r, &p) == nil && p.Name != "" {
			out[p.Name] = r
		}
	}
	return out, nil
}

func (f *FileStore) write(recs map[string]json.RawMessage) error {
	out := make([]json.RawMessage, 0, len(recs))
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		out = append(out, recs[name])
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteMode(f.path, append(data, '\n'), 0o600)
}

// All returns every saved record by name.
func (f *FileStore) All(context.Context) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(recs))
	for k, v := range recs {
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			v = b.Bytes()
		}
		out[k] = v
	}
	return out, nil
}

// Create saves rec under name unless a record is there.
func (f *FileStore) Create(_ context.Context, name string, rec []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return false, err
	}
	if _, ok := recs[name]; ok {
		return false, nil
	}
	recs[name] = rec
	return true, f.write(recs)
}

// Delete removes name's record.
func (f *FileStore) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return err
	}
	if _, ok := recs[name]; !ok {
		return nil
	}
	delete(recs, name)
	return f.write(recs)
}
