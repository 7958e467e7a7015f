package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"golang.org/x/oauth2"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
)

// Record is what the store keeps for one backend: the token and what a
// refresh needs (endpoint and client), never anything else.
type Record struct {
	Backend      string        `json:"backend"`
	Grant        string        `json:"grant"`
	Issuer       string        `json:"issuer,omitempty"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style,omitempty"`
	ClientID     string        `json:"client_id,omitempty"`
	ClientSecret string        `json:"client_secret,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
}

// Store keeps one 0600 JSON file per backend in a 0700 directory. Writes
// are atomic (rename) and every read-modify-write holds an flock on the
// backend's lock file, so two kiln processes refreshing the same token do
// not both spend a rotating refresh token.
type Store struct{ dir string }

// NewStore returns the store in dir, created on first write.
func NewStore(dir string) *Store { return &Store{dir: dir} }

var backendName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (s *Store) path(name, ext string) (string, error) {
	if !backendName.MatchString(name) {
		return "", fmt.Errorf("token store: backend name %q cannot name a file", name)
	}
	return filepath.Join(s.dir, name+ext), nil
}

// Load returns the backend's record, or nil when there is none.
func (s *Store) Load(name string) (*Record, error) {
	p, err := s.path(name, ".json")
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("token store: %s is corrupt (%v); run: kiln auth logout %s", p, err, name)
	}
	return &r, nil
}

// Update runs fn on the backend's record (nil when absent) under the
// backend's file lock and writes what fn returns; fn returning nil, nil
// deletes the record.
func (s *Store) Update(name string, fn func(*Record) (*Record, error)) error {
	unlock, err := s.lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := s.Load(name)
	if err != nil {
		return err
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	p, _ := s.path(name, ".json")
	if next == nil {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("token store: %w", err)
		}
		return nil
	}
	next.Backend = name
	raw, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := atomicfile.WriteMode(p, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// List returns the names of backends with a stored record.
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n, ok := cutSuffix(e.Name(), ".json"); ok && backendName.MatchString(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func cutSuffix(s, suf string) (string, bool) {
	if len(s) > len(suf) && s[len(s)-len(suf):] == suf {
		return s[:len(s)-len(suf)], true
	}
	return s, false
}

func (s *Store) lock(name string) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	p, err := s.path(name, ".lock")
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("token store: lock %s: %w", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
