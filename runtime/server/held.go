package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// Under drift: pin what a backend offers beyond its reviewed manifest is not
// registered with the SDK server, so a direct tools/call of a held-back
// tool, a prompts/get of a held-back prompt and a resources/read of a
// held-back resource get the SDK's "not found", which tells a model
// nothing useful. mcp-go v1.2.1 has no hook for unknown names (its tool
// and prompt filters also refuse at call time, so the items cannot be
// registered and hidden), so, like withNotFoundURI, patchOut rewrites the
// SDK's error on the way out: its message becomes the reason the item is
// held back and the command that accepts it.

// The SDK's own not-found messages, which carry the name asked for.
var (
	toolNotFoundRE   = regexp.MustCompile(`^tool '(.*)' not found`)
	promptNotFoundRE = regexp.MustCompile(`^prompt '(.*)' not found`)
)

var notFoundWord = []byte("not found")

// heldOffer is what of a backend's live resources and prompts is not
// served (drift: pin): the URIs and the prompt names.
type heldOffer struct {
	resources []string
	prompts   []string
}

// heldOf returns what of live the served offer leaves out.
func heldOf(live, served offer) heldOffer {
	var h heldOffer
	for _, r := range live.resources {
		if !slices.ContainsFunc(served.resources, func(s manifest.Resource) bool { return s.URI == r.URI }) {
			h.resources = append(h.resources, r.URI)
		}
	}
	for _, pr := range live.prompts {
		if !slices.ContainsFunc(served.prompts, func(s manifest.Prompt) bool { return s.Name == pr.Name }) {
			h.prompts = append(h.prompts, pr.Name)
		}
	}
	return h
}

// patchOut is the patch every outgoing message passes on stdio, on
// kiln serve's connections and on streamable HTTP.
func (s *Server) patchOut(msg []byte) []byte {
	return s.withHeldBack(withNotFoundURI(msg))
}

// withHeldBack returns msg with the message of a not-found error for a
// held-back tool, prompt or resource replaced by why it is held back; any
// other message is returned as it is.
func (s *Server) withHeldBack(msg []byte) []byte {
	if !bytes.Contains(msg, notFoundWord) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["error"] == nil {
		return msg
	}
	var e map[string]json.RawMessage
	var text string
	if json.Unmarshal(m["error"], &e) != nil || json.Unmarshal(e["message"], &text) != nil {
		return msg
	}
	reason := s.heldReason(text)
	if reason == "" {
		return msg
	}
	e["message"], _ = json.Marshal(reason)
	raw, err := json.Marshal(e)
	if err != nil {
		return msg
	}
	m["error"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// heldReason returns why the item an SDK not-found message names is held
// back, or "" when it is not.
func (s *Server) heldReason(text string) string {
	if sub := toolNotFoundRE.FindStringSubmatch(text); sub != nil {
		return s.heldTool(sub[1])
	}
	if sub := promptNotFoundRE.FindStringSubmatch(text); sub != nil {
		return s.heldItem(func(backend string, h heldOffer) string {
			for _, name := range h.prompts {
				if sub[1] == name || sub[1] == registry.ExposedBase(registry.ExposeTool{Backend: backend, Tool: name, Bare: s.bare(backend)}) {
					return "prompt " + name
				}
			}
			return ""
		})
	}
	if sub := notFoundRE.FindStringSubmatch(text); sub != nil {
		return s.heldItem(func(_ string, h heldOffer) string {
			if slices.Contains(h.resources, sub[1]) {
				return "resource " + sub[1]
			}
			return ""
		})
	}
	return ""
}

// heldTool returns the registry's reason for the held-back tool a direct
// call named: by its exposed name (backend__tool, or its own name for a
// bare backend), its ID or its bare name.
func (s *Server) heldTool(name string) string {
	if s.opts.Registry == nil {
		return ""
	}
	for _, id := range s.opts.Registry.HeldTools() {
		backend, tool, _ := strings.Cut(id, ".")
		if name != id && name != tool && name != registry.ExposedBase(registry.ExposeTool{Backend: backend, Tool: tool, Bare: s.bare(backend)}) {
			continue
		}
		if _, err := s.opts.Registry.Resolve(id); errors.Is(err, registry.ErrHeldBack) {
			return err.Error()
		}
	}
	return ""
}

// heldItem returns the held-back message for the first backend whose held
// offer match names an item in.
func (s *Server) heldItem(match func(backend string, h heldOffer) string) string {
	p := s.pass
	if p == nil {
		return ""
	}
	p.mu.Lock()
	held := maps.Clone(p.held) // match may take the catalog's lock
	p.mu.Unlock()
	for _, backend := range slices.Sorted(maps.Keys(held)) {
		if item := match(backend, held[backend]); item != "" {
			return catalog.HeldOfferMessage(backend, item)
		}
	}
	return ""
}

// reviewedDescription returns the description prompts/list shows for ref
// when the backend's live prompt says otherwise: under drift: pin the
// listing is the reviewed one, and a prompts/get result must not carry the
// changed (possibly poisoned) description the listing holds back. The
// messages are the backend's answer, like a tool's result, and pass on.
func (p *passthru) reviewedDescription(ref promptRef) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	find := func(ps []manifest.Prompt) *manifest.Prompt {
		for i := range ps {
			if ps[i].Name == ref.name {
				return &ps[i]
			}
		}
		return nil
	}
	served, live := find(p.offers[ref.backend].prompts), find(p.live[ref.backend].prompts)
	if served == nil || live == nil || served.Description == live.Description {
		return "", false
	}
	return served.Description, true
}
