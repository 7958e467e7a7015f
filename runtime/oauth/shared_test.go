package oauth_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/kilnmcp/kiln/runtime/oauth"
	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

// The file store and the shared store keep one contract, and the shared
// store's lock holds across replicas: 2 × 25 read-modify-writes from two
// connections (standing for two kiln replicas refreshing one token) lose
// none.
func TestTokenStores(t *testing.T) {
	srv := redistest.Start(t)
	shared := func() oauth.TokenStore {
		r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return oauth.NewSharedStore(r.Hash("oauth"))
	}
	dir := t.TempDir()
	for name, open := range map[string]func() oauth.TokenStore{
		"file":   func() oauth.TokenStore { return oauth.NewStore(dir) },
		"shared": shared,
	} {
		t.Run(name, func(t *testing.T) {
			a, b := open(), open()
			if r, err := a.Load("tracker"); r != nil || err != nil {
				t.Fatalf("Load before any Update = %v, %v", r, err)
			}
			var wg sync.WaitGroup
			for _, s := range []oauth.TokenStore{a, b} {
				wg.Go(func() {
					for range 25 {
						err := s.Update("tracker", func(r *oauth.Record) (*oauth.Record, error) {
							n := 0
							if r != nil {
								n, _ = strconv.Atoi(r.Token.AccessToken)
							}
							return &oauth.Record{Grant: "client_credentials", TokenURL: "https://as.example/token",
								Token: &oauth2.Token{AccessToken: strconv.Itoa(n + 1)}}, nil
						})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			r, err := b.Load("tracker")
			if err != nil || r == nil || r.Token.AccessToken != "50" || r.Backend != "tracker" {
				t.Fatalf("after 50 locked updates: %+v, %v; want token 50 for tracker", r, err)
			}
			if names, err := a.List(); err != nil || len(names) != 1 || names[0] != "tracker" {
				t.Errorf("List = %v, %v", names, err)
			}
			if err := a.Update("tracker", func(*oauth.Record) (*oauth.Record, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
			if r, err := b.Load("tracker"); r != nil || err != nil {
				t.Errorf("Load after logout = %v, %v", r, err)
			}
		})
	}
}
