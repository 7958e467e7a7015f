package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/oauth"
)

// ErrFailed is returned when at least one backend could not be recorded.
var ErrFailed = errors.New("some backends could not be recorded")

// Options tune a recording.
type Options struct {
	// Progress receives one line per backend as it finishes; nil discards.
	Progress io.Writer
	// Version is kiln's version, sent to backends as clientInfo.
	Version string
	// Prune deletes the manifests of backends the config does not declare.
	// Without it they are listed and kept: a config that declares only some
	// backends (a test config, a second project) must not delete the rest.
	Prune bool
}

// Outcome is what happened to one backend.
type Outcome struct {
	Backend  string
	Manifest *manifest.Manifest // nil on failure
	Err      error
	Took     time.Duration
}

// Snapshot connects to every enabled backend concurrently and returns one
// outcome per backend, sorted by name, printing a progress line for each as
// it finishes.
func Snapshot(ctx context.Context, cfg *config.Config, opts Options) []Outcome {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []Outcome
	)
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if !b.Enabled {
			fmt.Fprintf(progress, "- %s: disabled, skipped (its manifest, if any, is kept)\n", b.Name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := snapshotOne(ctx, cfg, b, opts.Version)
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(progress, line(o))
			out = append(out, o)
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b Outcome) int { return strings.Compare(a.Backend, b.Backend) })
	return out
}

func snapshotOne(ctx context.Context, cfg *config.Config, b *config.Backend, version string) Outcome {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.Gateway.ConnectTimeout)
	defer cancel()
	// Tokens come from `kiln auth login` (or the client credentials grant)
	// and refresh through the same store kiln serve uses.
	tokens := oauth.NewManager(oauth.ManagerOptions{Dir: filepath.Join(cfg.Gateway.StateDir, "oauth")})
	defer tokens.Close() // after conn.Close: a refresh in flight is stored
	hc, err := tokens.HTTPClient(b)
	if err != nil {
		return Outcome{Backend: b.Name, Err: err, Took: time.Since(start)}
	}
	// Offer the client capabilities kiln serve offers, so the manifest
	// holds the tools a backend shows only to clients that can answer its
	// requests (server-everything's sampling and elicitation tools).
	conn, err := backend.Dial(ctx, b, backend.Options{ClientName: "kiln-gen", ClientVersion: version, OnRequest: refuseRequest, HTTPClient: hc})
	if err != nil {
		return Outcome{Backend: b.Name, Err: err, Took: time.Since(start)}
	}
	defer conn.Close()
	m, err := conn.Snapshot(ctx)
	return Outcome{Backend: b.Name, Manifest: m, Err: err, Took: time.Since(start)}
}

// refuseRequest answers a backend that asks a question while kiln-gen
// records it: no one is there to answer.
func refuseRequest(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("kiln-gen record cannot answer %s: it only lists what the backend offers", method)
}

func line(o Outcome) string {
	took := o.Took.Round(10 * time.Millisecond)
	if o.Err != nil {
		return fmt.Sprintf("✗ %s: failed after %s: %v", o.Backend, took, o.Err)
	}
	m := o.Manifest
	return fmt.Sprintf("✓ %s: connected (%s %s, protocol %s), %s, %s, %s, %s in %s",
		o.Backend, m.Server.Name, m.Server.Version, m.ProtocolVersion,
		count(len(m.Tools), "tool"), count(len(m.Resources), "resource"),
		count(len(m.ResourceTemplates), "resource template"), count(len(m.Prompts), "prompt"), took)
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Run records every enabled backend into dir, then deletes (Options.Prune)
// or lists the manifests of backends the config does not declare. Backends
// that fail keep their previous manifest; Run then returns an error
// wrapping ErrFailed.
func Run(ctx context.Context, cfg *config.Config, dir string, opts Options) error {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	outcomes := Snapshot(ctx, cfg, opts)
	var failed []string
	for _, o := range outcomes {
		if o.Err != nil {
			failed = append(failed, o.Backend)
			continue
		}
		if _, err := manifest.WriteFile(dir, o.Manifest); err != nil {
			return fmt.Errorf("write manifest for %q: %w", o.Backend, err)
		}
	}
	if err := prune(dir, cfg, opts.Prune, progress); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s (their previous manifests, if any, are unchanged)", ErrFailed, strings.Join(failed, ", "))
	}
	return nil
}

// undeclared returns the manifests in dir whose backend cfg does not
// declare, sorted.
func undeclared(dir string, cfg *config.Config) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if _, ok := cfg.Backend(strings.TrimSuffix(filepath.Base(p), ".json")); !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// prune deletes manifests whose backend is no longer in the config, so a
// removed backend disappears from the next emit and the review diff shows
// it; without del it only says which it would delete and how.
func prune(dir string, cfg *config.Config, del bool, progress io.Writer) error {
	stale, err := undeclared(dir, cfg)
	if err != nil {
		return err
	}
	for _, p := range stale {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if !del {
			fmt.Fprintf(progress, "- %s: kept %s, which %s does not declare (pass --prune to delete it)\n", name, p, cfg.Path)
			continue
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		fmt.Fprintf(progress, "- %s: removed %s (no longer declared in %s)\n", name, p, cfg.Path)
	}
	return nil
}
