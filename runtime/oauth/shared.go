package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// TokenStore keeps one Record per backend: Store (files in
// state_dir/oauth, flock) on one host, SharedStore (gateway.state_url) for
// a fleet. Update runs fn under a lock every kiln sharing the store
// honours, so a rotating refresh token is spent once.
type TokenStore interface {
	Load(name string) (*Record, error)
	Update(name string, fn func(*Record) (*Record, error)) error
	List() ([]string, error)
}

// Blobs is shared state records live in (runtime/state's Redis hash):
// Update holds a lock every replica honours, for at most lease.
type Blobs interface {
	Get(ctx context.Context, field string) ([]byte, error)
	Update(ctx context.Context, field string, lease time.Duration, fn func(cur []byte) ([]byte, error)) error
	Fields(ctx context.Context) ([]string, error)
}

// sharedLease bounds how long one replica holds a backend's token lock:
// a refresh is one HTTP exchange with the token endpoint. sharedWait
// bounds waiting for the lock and the exchange together.
const (
	sharedLease = 30 * time.Second
	sharedWait  = 45 * time.Second
	// refreshTimeout bounds one refresh exchange, under sharedLease.
	refreshTimeout = 20 * time.Second
)

// SharedStore keeps token records in a fleet's shared state.
type SharedStore struct{ b Blobs }

// NewSharedStore returns the store over b.
func NewSharedStore(b Blobs) *SharedStore { return &SharedStore{b: b} }

func decodeRecord(name string, raw []byte) (*Record, error) {
	if raw == nil {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("token store: the shared record of %s is corrupt (%v); run: kiln auth logout %s", name, err, name)
	}
	return &r, nil
}

// Load returns the backend's record, or nil when there is none.
func (s *SharedStore) Load(name string) (*Record, error) {
	raw, err := s.b.Get(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return decodeRecord(name, raw)
}

// Update runs fn on the backend's record (nil when absent) under the
// fleet-wide lock and stores what fn returns; nil, nil deletes it.
func (s *SharedStore) Update(name string, fn func(*Record) (*Record, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	err := s.b.Update(ctx, name, sharedLease, func(cur []byte) ([]byte, error) {
		r, err := decodeRecord(name, cur)
		if err != nil {
			return nil, err
		}
		next, err := fn(r)
		if err != nil {
			return cur, err
		}
		if next == nil {
			return nil, nil
		}
		next.Backend = name
		return json.Marshal(next)
	})
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// List returns the names of backends with a stored record.
func (s *SharedStore) List() ([]string, error) {
	names, err := s.b.Fields(context.Background())
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return names, nil
}
