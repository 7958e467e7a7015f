package oauth

import (
	"sync"
)

// LoginStore is the store of one `kiln auth login`: the backend's record
// starts empty (so the login asks for a new token) and lives in memory
// until Commit writes it to the real store. A login abandoned or failed
// half-way leaves the stored token, which every replica of a fleet may be
// using, as it was.
type LoginStore struct {
	backing TokenStore
	name    string
	mu      sync.Mutex
	rec     *Record
	// committed sends everything to backing once the login's token is
	// stored: a refresh after that (the login's own connection closing)
	// must reach the store the serving replicas read.
	committed bool
}

// NewLoginStore returns the login store of backend name over backing.
func NewLoginStore(backing TokenStore, name string) *LoginStore {
	return &LoginStore{backing: backing, name: name}
}

// Load returns the login's record for its backend, and backing's for any
// other.
func (s *LoginStore) Load(name string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != s.name || s.committed {
		return s.backing.Load(name)
	}
	return s.rec, nil
}

// Update runs fn on the login's record for its backend, and on backing's
// for any other.
func (s *LoginStore) Update(name string, fn func(*Record) (*Record, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != s.name || s.committed {
		return s.backing.Update(name, fn)
	}
	next, err := fn(s.rec)
	if err != nil {
		return err
	}
	s.rec = next
	return nil
}

// List lists backing's records.
func (s *LoginStore) List() ([]string, error) { return s.backing.List() }

// Commit stores the login's record in backing, replacing what was there.
// It reports whether there was one: a backend that let kiln in without
// authorization leaves none, and the stored one is kept.
func (s *LoginStore) Commit() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return false, nil
	}
	rec := s.rec
	if err := s.backing.Update(s.name, func(*Record) (*Record, error) { return rec, nil }); err != nil {
		return true, err
	}
	s.committed = true
	return true, nil
}
