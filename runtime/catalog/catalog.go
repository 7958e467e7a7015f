package catalog

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// Searcher ranks tools; With returns one that also finds extra and no
// longer finds the removed backends' tools, leaving the receiver as it was.
type Searcher interface {
	Search(query string, opts search.Options) []search.Hit
	TryAlso(backend, query string, n int) []string
	With(extra []search.Doc, removed ...string) Searcher
}

// Lexical adapts the frozen lexical index to Searcher.
func Lexical(ix *search.Index) Searcher { return lexical{ix} }

type lexical struct{ *search.Index }

func (l lexical) With(extra []search.Doc, removed ...string) Searcher {
	return lexical{l.Index.With(extra, removed...)}
}

// Backends is what the catalog drives: the dispatcher.
type Backends interface {
	Tools(ctx context.Context, name string) ([]manifest.Tool, error)
	Snapshot(ctx context.Context, name string) (*manifest.Manifest, error)
	AddBackend(b config.Backend) error
	RemoveBackend(name string) bool
	Ready(name string) <-chan struct{}
	Status() []dispatch.Status
}

// View is the catalog at one moment. It is immutable.
type View struct {
	Search Searcher
	// Table and Bridge describe the backends the sandbox binds; Extra is
	// the preamble that rebinds them when any differ from the compiled
	// preamble, "" otherwise.
	Table  *bridge.Table
	Bridge []bridge.Backend
	Extra  string
}

// Options configure a Catalog.
type Options struct {
	Registry *registry.Registry
	Backends Backends
	Config   *config.Config
	// Search is the frozen index compiled into kiln.
	Search Searcher
	// OnAdmit, when set, sees each backend admitted for registration
	// before it starts, so its secrets can be redacted from then on.
	OnAdmit func(config.Backend)
	// OnChange, when set, is called after every change of the live tool
	// set (drift, registration, deregistration), with the catalog's lock
	// held so changes arrive in order: it must not call back into methods
	// that lock (Bare and View are safe).
	OnChange func()
	// OnEvent, when set, hears what an auditor wants on record: kind is
	// "register", "deregister", "drift" (a compiled backend's live list
	// differs from its review, or matches it again) or "hidden" (an
	// unreviewed tool with poisoning findings); detail says what.
	// Called with the catalog's lock held, like OnChange.
	OnEvent func(kind, backend, detail string)
	// Store keeps registrations across restarts and, when it is a
	// Watcher, shares them with other replicas (Follow); nil keeps them
	// in memory only.
	Store  Store
	Logger *slog.Logger
}

// Catalog is safe for concurrent use.
type Catalog struct {
	opts     Options
	log      *slog.Logger
	compiled map[string]*manifest.Manifest // start-up truth, by backend

	mu    sync.Mutex // serializes changes; readers use view
	cfg   *config.Config
	drift map[string]Drift
	// reviewed marks the backends compiled in from a reviewed manifest,
	// the only ones a drift mode other than follow applies to (pin.go).
	reviewed map[string]bool
	// lastLive and lastOffer are the live lists last seen of drifted
	// backends, so drift is logged once per change, not per refresh.
	lastLive   map[string][]manifest.Tool
	lastOffer  map[string]Offer
	offerDrift map[string]OfferDrift
	dynamic    map[string]json.RawMessage // definitions registered at run time, by name
	pending    map[string]bool            // registrations still connecting
	// ignored holds shared records this replica refused (by name: the
	// record), so each is logged once, not at every resync.
	ignored map[string]string
	view    atomic.Pointer[View]
	// hidden are compiled backends the running config does not name: out
	// of the registry, the search index and the sandbox. unbind is the
	// script that removes every global the compiled preamble bound, with
	// its identifiers: the extra preamble starts with it, so it never
	// leaves a compiled object under a name (an original name such as
	// "my-backend", which a later binding would not replace) or a hidden
	// backend under an identifier the live set would give another.
	hidden []string
	unbind string
	bare   atomic.Pointer[map[string]bool]

	// syncing serializes Follow's syncs, which read the store without mu.
	// gen counts this replica's own changes to the store, so a sync whose
	// read raced one reads again instead of undoing it; epoch is the
	// store's epoch (Epoched) last seen, and lost the registrations to
	// publish again since the store lost them.
	syncing sync.Mutex
	gen     uint64
	epoch   string
	lost    map[string]bool
	// leaving counts Deregister calls removing a name from the store.
	leaving map[string]int

	// screenLog is the findings last logged per unreviewed tool
	// ("backend.tool"), so each is logged once (screen.go).
	screenLog map[string]string

	// refreshing serializes refreshes per backend, so an older tool list
	// fetched slowly never replaces a newer one.
	refreshing sync.Map // backend name -> *sync.Mutex
}

// New builds the catalog over the registry's compiled backends.
func New(opts Options) *Catalog {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{opts: opts, log: log, cfg: opts.Config, compiled: map[string]*manifest.Manifest{},
		drift: map[string]Drift{}, reviewed: map[string]bool{}, lastLive: map[string][]manifest.Tool{}, lastOffer: map[string]Offer{}, offerDrift: map[string]OfferDrift{},
		dynamic: map[string]json.RawMessage{}, pending: map[string]bool{}, ignored: map[string]string{}, lost: map[string]bool{}, leaving: map[string]int{}}
	c.hideUndeclared()
	for _, b := range opts.Registry.Backends() {
		if b.Compiled {
			c.compiled[b.Name()] = b.Manifest
			c.reviewed[b.Name()] = true
		}
	}
	// A backend declared in the config but not compiled in is compared with
	// an empty manifest: once it connects, all its tools are drift and are
	// served live until `make generate` freezes them.
	for _, b := range opts.Config.Backends {
		if _, ok := c.compiled[b.Name]; ok {
			continue
		}
		if b.Transport == config.TransportWorkspace && b.Enabled {
			// Kiln's own tools, known from the config: listed from the
			// start and callable at once, not only once the workspace
			// has opened (a client's first tools/list saw none).
			m := workspace.Manifest(&b)
			if err := opts.Registry.Add(m, false); err == nil {
				c.compiled[b.Name] = m
				continue
			}
		}
		c.compiled[b.Name] = &manifest.Manifest{Version: manifest.Version, Backend: b.Name, Transport: b.Transport}
	}
	c.publishLocked()
	return c
}

// hideUndeclared removes from the registry every compiled backend the
// config does not name: a kiln binary run with another config shows what
// that config serves, not what it was built with.
func (c *Catalog) hideUndeclared() {
	// A set, not c.declared per backend: that scan was quadratic in a
	// large fleet (4 ms of a 1,246-backend start, BenchmarkStartFleet).
	declared := make(map[string]bool, len(c.cfg.Backends))
	for _, b := range c.cfg.Backends {
		declared[b.Name] = true
	}
	var compiled []bridge.Backend
	for _, b := range c.opts.Registry.Backends() {
		if !b.Compiled {
			continue
		}
		// Names are enough: identifiers depend on the set of names only.
		compiled = append(compiled, bridge.Backend{Name: b.Name()})
		if !declared[b.Name()] {
			c.hidden = append(c.hidden, b.Name())
		}
	}
	// Besides the hidden backends, only those bound under a second name
	// need unbinding: the extra preamble replaces an identifier's binding
	// but leaves a name some global holds, the compiled object included.
	// Each drop costs every program run with an extra preamble, so the
	// others are not listed.
	t := bridge.Lookup(compiled)
	drop := slices.Clone(c.hidden)
	for _, b := range compiled {
		if id, _ := t.BackendIdent(b.Name); id != b.Name {
			drop = append(drop, b.Name)
		}
	}
	c.unbind = t.Unbind(drop...)
	if len(c.hidden) == 0 {
		return
	}
	for _, name := range c.hidden {
		c.opts.Registry.Remove(name)
	}
	c.log.Info("compiled backends not named in the config are not served: their tools, resources and prompts appear nowhere",
		"backends", strings.Join(c.hidden, ","), "config", c.cfg.Path)
}

// View returns the current view.
func (c *Catalog) View() *View { return c.view.Load() }

// SetConfig records the config a reload applied.
func (c *Catalog) SetConfig(cfg *config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteModeChanges(cfg)
	c.cfg = cfg
	// backends.NAME.bare applies at once: the exposed names follow.
	c.publishBareLocked()
	if c.opts.OnChange != nil {
		c.opts.OnChange()
	}
}

// publishLocked rebuilds the view from the registry: every backend whose
// tools differ from the compiled index (drifted or registered at run time)
// goes into the search overlay and, when there is any, into a full bridge
// preamble that rebinds every backend.
func (c *Catalog) publishLocked() {
	var extra []search.Doc
	var changed []string
	var bridged []bridge.Backend
	for _, b := range c.opts.Registry.Backends() {
		bridged = append(bridged, bridge.Backend{Name: b.Name(), Tools: b.Manifest.Tools})
		// A drifted backend under pin serves its compiled tools, which the
		// frozen index already holds.
		if d, drifted := c.drift[b.Name()]; !b.Compiled || drifted && d.Mode != config.DriftPin {
			changed = append(changed, b.Name())
			for _, t := range b.Manifest.Tools {
				extra = append(extra, search.NewDoc(b.Name(), t.Name, t.Title, t.Description, t.InputSchema))
			}
		}
	}
	v := &View{Search: c.opts.Search, Table: bridge.Lookup(bridged), Bridge: bridged}
	changed = append(changed, c.hidden...)
	if len(changed) > 0 {
		// A changed backend with no tools left must still hide its
		// compiled ones.
		v.Search = c.opts.Search.With(extra, changed...)
		v.Extra = c.unbind + string(bridge.Preamble(bridged))
	}
	c.view.Store(v)
	c.publishBareLocked()
	if c.opts.OnChange != nil {
		c.opts.OnChange()
	}
}

// event passes an auditable event to Options.OnEvent.
func (c *Catalog) event(kind, backend, detail string) {
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(kind, backend, detail)
	}
}
