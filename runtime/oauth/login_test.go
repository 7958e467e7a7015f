package oauth

import (
	"path/filepath"
	"testing"

	"golang.org/x/oauth2"
)

// A login starts from no token and leaves the stored one as it was until
// Commit, so an abandoned login costs nothing.
func TestLoginStoreCommitsOnlyAtTheEnd(t *testing.T) {
	backing := NewStore(filepath.Join(t.TempDir(), "oauth"))
	old := &Record{Backend: "web", Token: &oauth2.Token{AccessToken: "old"}}
	if err := backing.Update("web", func(*Record) (*Record, error) { return old, nil }); err != nil {
		t.Fatal(err)
	}
	login := NewLoginStore(backing, "web")
	if r, err := login.Load("web"); r != nil || err != nil {
		t.Fatalf("the login's record before it logs in: %+v, %v; want none", r, err)
	}
	if err := login.Update("web", func(*Record) (*Record, error) {
		return &Record{Backend: "web", Token: &oauth2.Token{AccessToken: "new"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if r, _ := backing.Load("web"); r == nil || r.Token.AccessToken != "old" {
		t.Fatalf("stored before Commit: %+v; want the old token kept", r)
	}
	if stored, err := login.Commit(); !stored || err != nil {
		t.Fatalf("Commit = %v, %v", stored, err)
	}
	if r, _ := backing.Load("web"); r == nil || r.Token.AccessToken != "new" {
		t.Fatalf("stored after Commit: %+v; want the new token", r)
	}
	// After Commit a refresh (the login's connection closing) reaches
	// the store the serving kilns read.
	if err := login.Update("web", func(r *Record) (*Record, error) {
		r.Token = &oauth2.Token{AccessToken: "refreshed"}
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	if r, _ := backing.Load("web"); r == nil || r.Token.AccessToken != "refreshed" {
		t.Fatalf("stored after a refresh past Commit: %+v; want the refreshed token", r)
	}
	if stored, err := NewLoginStore(backing, "other").Commit(); stored || err != nil {
		t.Errorf("Commit of a login that stored nothing = %v, %v; want false, nil", stored, err)
	}
}
