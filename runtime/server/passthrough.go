package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/route"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// Passthrough reaches the backends' resources, prompts, completions,
// subscriptions and log levels; *dispatch.Dispatcher is one.
type Passthrough interface {
	ListResources(ctx context.Context, backend string) ([]manifest.Resource, error)
	ListResourceTemplates(ctx context.Context, backend string) ([]manifest.ResourceTemplate, error)
	ListPrompts(ctx context.Context, backend string) ([]manifest.Prompt, error)
	ReadResource(ctx context.Context, backend, uri string) (json.RawMessage, error)
	GetPrompt(ctx context.Context, backend, prompt string, args map[string]string) (json.RawMessage, error)
	Complete(ctx context.Context, backend string, ref backend.CompleteRef, arg, value string, chosen map[string]string) (json.RawMessage, error)
	Subscribe(ctx context.Context, backend, uri string) error
	Unsubscribe(ctx context.Context, backend, uri string) error
	SetLevel(ctx context.Context, backend, level string) error
}

// offer is what one backend lists: its compiled manifest's lists until it
// connects, then its live lists.
type offer struct {
	resources []manifest.Resource
	templates []manifest.ResourceTemplate
	prompts   []manifest.Prompt
}

// promptRef is a backend prompt behind its exposed name.
type promptRef struct{ backend, name string }

// passthru serves the backends' resources and prompts beside kiln's own:
// it keeps each backend's offer, registers the merged lists with the SDK
// server (which then lists, paginates and announces list changes) and
// routes reads, prompts and completions to the owning backend.
type passthru struct {
	s *Server

	mu     sync.Mutex // serializes sync
	offers map[string]offer
	// live is each connected backend's last live offer, which a refresh
	// of one kind completes (offers holds what is served: under drift:
	// pin the reviewed lists); held is what of it is not served (held.go).
	live map[string]offer
	held map[string]heldOffer
	// Registered with the SDK server, with a fingerprint so an unchanged
	// item is not registered again (each registration notifies clients).
	resources map[string]string // URI -> fingerprint
	templates map[string]string // template -> fingerprint
	prompts   map[string]string // exposed name -> fingerprint

	table   atomic.Pointer[route.Table]
	exposed atomic.Pointer[map[string]promptRef]

	subs    subscriptions
	pending pendingSubs
	logs    logState

	// refreshing serializes refreshes per backend, so a slow, older list
	// never replaces a newer one.
	refreshing sync.Map // backend name -> *sync.Mutex
}

func (s *Server) addPassthrough() {
	p := &passthru{s: s, offers: map[string]offer{}, live: map[string]offer{}, held: map[string]heldOffer{},
		resources: map[string]string{}, templates: map[string]string{}, prompts: map[string]string{}}
	p.table.Store(route.New(nil))
	p.exposed.Store(&map[string]promptRef{})
	p.subs.init()
	p.logs.init()
	var backends []*registry.Backend
	if s.opts.Registry != nil {
		backends = s.opts.Registry.Backends()
	}
	for _, b := range backends {
		m := b.Manifest
		// A compiled backend the running config does not name cannot
		// serve a read, so its lists are not shown.
		if s.opts.Config != nil && b.Compiled {
			if _, declared := s.opts.Config.Backend(m.Backend); !declared {
				continue
			}
		}
		p.offers[m.Backend] = offer{m.Resources, m.ResourceTemplates, m.Prompts}
	}
	s.pass = p
	p.sync()
	p.hook(s.hooks)
}

// promptNames names every backend prompt the way direct exposure names
// tools, with the same resolver (registry.ExposeNames): backend__prompt,
// or the prompt's own name for a bare backend, characters outside
// [a-zA-Z0-9_-] mapped to '_', and a stable hash suffix on a collision or
// past 64 characters. kiln's own prompt names are never given out.
func (p *passthru) promptNames(names []string) map[string]string {
	var all []registry.ExposeTool
	for _, name := range names {
		bare := p.s.bare(name)
		for _, pr := range p.offers[name].prompts {
			all = append(all, registry.ExposeTool{Backend: name, Tool: pr.Name, Bare: bare})
		}
	}
	out, collisions := registry.ExposeNames(all, func(n string) bool { return kilnPrompts[n] })
	for _, c := range collisions {
		p.s.log.Warn("backend prompts share an exposed name; each got a suffix", "name", c.Name, "prompts", strings.Join(c.IDs, ","))
	}
	return out
}

// Refresh replaces a connected backend's offer with its live lists (kinds
// "resources" and "prompts"; none means both) and updates what clients
// see. kiln calls it when a backend connects and when it announces a list
// change; the SDK server then tells clients their lists changed.
func (s *Server) Refresh(ctx context.Context, name string, kinds ...string) error {
	p := s.pass
	if p == nil || s.opts.Passthrough == nil {
		return nil
	}
	want := func(k string) bool { return len(kinds) == 0 || slices.Contains(kinds, k) }
	mu, _ := p.refreshing.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if len(kinds) == 0 {
		// A (re)connected backend has forgotten kiln's subscriptions and
		// log level. They are renewed even when a list fails (the lists
		// are only what clients see), within a budget of their own as
		// long as the refresh's: a slow list must not use up their time.
		dl, bounded := ctx.Deadline()
		budget := time.Until(dl)
		defer func() {
			rctx := context.WithoutCancel(ctx)
			if bounded {
				// A deadline already past leaves no budget: the renewal
				// fails at once (and says so in the log) rather than
				// running without a bound.
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, budget)
				defer cancel()
			}
			p.resubscribe(rctx, name)
			p.logs.apply(rctx, s, name)
		}()
	}
	p.mu.Lock()
	o, ok := p.live[name]
	if !ok {
		o = p.offers[name]
	}
	p.mu.Unlock()
	var err error
	if want("resources") {
		if o.resources, err = s.opts.Passthrough.ListResources(ctx, name); err != nil {
			return fmt.Errorf("refresh %s resources: %w", name, err)
		}
		if o.templates, err = s.opts.Passthrough.ListResourceTemplates(ctx, name); err != nil {
			return fmt.Errorf("refresh %s resource templates: %w", name, err)
		}
	}
	if want("prompts") {
		if o.prompts, err = s.opts.Passthrough.ListPrompts(ctx, name); err != nil {
			return fmt.Errorf("refresh %s prompts: %w", name, err)
		}
	}
	served := s.serveOffer(name, o)
	p.mu.Lock()
	p.live[name] = o
	p.offers[name] = served
	p.held[name] = heldOf(o, served)
	p.mu.Unlock()
	p.sync()
	return nil
}

// Forget drops a backend's offer (a runtime backend deregistered).
func (s *Server) Forget(name string) {
	if p := s.pass; p != nil {
		p.mu.Lock()
		delete(p.offers, name)
		delete(p.live, name)
		delete(p.held, name)
		p.mu.Unlock()
		p.sync()
	}
}

// sync registers the merged lists with the SDK server: backends in
// declared (name) order, the first to claim a URI, template or exposed
// prompt name keeps it, kiln's own kiln:// resources and prompts always
// win. Only changes are registered, so clients hear of real changes only.
// The SDK serves each list in one page: its cursor is the last item's name,
// which backends do not keep unique, so kiln sets no page limit (clients
// that follow nextCursor simply get none).
func (p *passthru) sync() {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := slices.Sorted(maps.Keys(p.offers))
	var routes []route.Backend
	res := map[string]server.ServerResource{}
	tpls := map[string]server.ServerResourceTemplate{}
	prompts := map[string]server.ServerPrompt{}
	exposed := map[string]promptRef{}
	fpRes, fpTpl, fpPrompt := map[string]string{}, map[string]string{}, map[string]string{}
	promptNames := p.promptNames(names)
	for _, name := range names {
		o := p.offers[name]
		rb := route.Backend{Name: name}
		for _, r := range o.resources {
			rb.URIs = append(rb.URIs, r.URI)
			if _, taken := res[r.URI]; taken || strings.HasPrefix(r.URI, route.Reserved) {
				continue
			}
			var mr mcp.Resource
			if raw, err := json.Marshal(r); err == nil && json.Unmarshal(raw, &mr) == nil {
				res[r.URI] = server.ServerResource{Resource: mr, Handler: p.read}
				fpRes[r.URI] = string(raw)
			}
		}
		for _, t := range o.templates {
			rb.Templates = append(rb.Templates, t.URITemplate)
			if _, taken := tpls[t.URITemplate]; taken || strings.HasPrefix(t.URITemplate, route.Reserved) {
				continue
			}
			var mt mcp.ResourceTemplate
			if raw, err := json.Marshal(t); err == nil && json.Unmarshal(raw, &mt) == nil && mt.URITemplate != nil {
				tpls[t.URITemplate] = server.ServerResourceTemplate{Template: mt, Handler: server.ResourceTemplateHandlerFunc(p.read)}
				fpTpl[t.URITemplate] = string(raw)
			}
		}
		for _, pr := range o.prompts {
			ex := promptNames[name+"."+pr.Name]
			if _, taken := exposed[ex]; taken || kilnPrompts[ex] {
				p.s.log.Warn("backend prompt hidden: its exposed name is taken", "backend", name, "prompt", pr.Name, "exposed", ex)
				continue
			}
			raw, err := json.Marshal(pr)
			var mp mcp.Prompt
			if err != nil || json.Unmarshal(raw, &mp) != nil {
				continue
			}
			mp.Name = ex
			exposed[ex] = promptRef{backend: name, name: pr.Name}
			prompts[ex] = server.ServerPrompt{Prompt: mp, Handler: p.prompt}
			fpPrompt[ex] = string(raw)
		}
		routes = append(routes, rb)
	}
	// One pass: each template is parsed and its matcher compiled once.
	table, problems := route.NewWithProblems(routes)
	for text := range tpls {
		if _, routed := table.TemplateOwner(text); !routed {
			// A template the table does not route (route.Parse refused
			// it) is hidden, as the problems say: the SDK matches every
			// templated read against every template it holds and would
			// panic on such a one holding its resources lock.
			delete(tpls, text)
			delete(fpTpl, text)
		}
	}
	p.table.Store(table)
	p.exposed.Store(&exposed)
	moves, settled := p.subs.moved(table)
	for _, m := range moves {
		safe.Go(p.s.log, "moving the subscription to "+m.uri, func() { p.rehome(m.uri, m.from, m.to) })
	}
	for _, m := range settled {
		p.s.log.Info("a resource subscription that could not move needs no move now: the backend kiln subscribed at serves the URI again", "uri", m.uri, "backend", m.from)
	}
	for _, w := range problems {
		if !p.warned(w) {
			p.s.log.Warn("resource routing", "problem", w)
		}
	}
	p.apply(res, fpRes, tpls, fpTpl, prompts, fpPrompt)
}

// warned reports whether w was logged before, so a refresh does not
// repeat the same warning.
func (p *passthru) warned(w string) bool {
	if p.logs.warned == nil {
		p.logs.warned = map[string]bool{}
	}
	if p.logs.warned[w] {
		return true
	}
	p.logs.warned[w] = true
	return false
}

// changes compares what was registered (fingerprints by key) with what
// should be: the items to add or replace, and the keys to delete.
func changes[T any](was, now map[string]string, items map[string]T) (add []T, del []string) {
	for k, fp := range now {
		if was[k] != fp {
			add = append(add, items[k])
		}
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			del = append(del, k)
		}
	}
	return add, del
}

// apply registers what changed since the last sync. Called with p.mu held.
func (p *passthru) apply(res map[string]server.ServerResource, fpRes map[string]string,
	tpls map[string]server.ServerResourceTemplate, fpTpl map[string]string,
	prompts map[string]server.ServerPrompt, fpPrompt map[string]string) {
	addRes, delRes := changes(p.resources, fpRes, res)
	addTpl, delTpl := changes(p.templates, fpTpl, tpls)
	addPrompt, delPrompt := changes(p.prompts, fpPrompt, prompts)
	if len(delRes) > 0 {
		p.s.mcp.DeleteResources(delRes...)
	}
	if len(addRes) > 0 {
		p.s.mcp.AddResources(addRes...)
	}
	if len(delTpl) > 0 {
		// The SDK has no call that removes a template; re-registering
		// every remaining one after clearing is the only way.
		keep := append([]server.ServerResourceTemplate{}, kilnTemplates(p.s)...)
		for _, t := range tpls {
			keep = append(keep, t)
		}
		p.s.mcp.SetResourceTemplates(keep...)
	} else if len(addTpl) > 0 {
		p.s.mcp.AddResourceTemplates(addTpl...)
	}
	if len(delPrompt) > 0 {
		p.s.mcp.DeletePrompts(delPrompt...)
	}
	if len(addPrompt) > 0 {
		p.s.mcp.AddPrompts(addPrompt...)
	}
	if n := len(addRes) + len(delRes) + len(addTpl) + len(delTpl) + len(addPrompt) + len(delPrompt); n > 0 {
		p.s.log.Debug("backend resources and prompts changed", "resources", len(addRes)+len(delRes),
			"templates", len(addTpl)+len(delTpl), "prompts", len(addPrompt)+len(delPrompt))
	}
	p.resources, p.templates, p.prompts = fpRes, fpTpl, fpPrompt
}

// owner returns the backend that serves uri.
func (p *passthru) owner(uri string) (string, bool) { return p.table.Load().Owner(uri) }

// completionOwner returns the backend a ref/resource completion goes to:
// the one that listed the template, else the owner of the URI.
func (p *passthru) completionOwner(uri string) (string, bool) {
	if b, ok := p.table.Load().TemplateOwner(uri); ok {
		return b, true
	}
	return p.owner(uri)
}

// promptOf returns the backend prompt behind an exposed name.
func (p *passthru) promptOf(exposed string) (promptRef, bool) {
	r, ok := (*p.exposed.Load())[exposed]
	return r, ok
}
