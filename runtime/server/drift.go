package server

import (
	"slices"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
)

// DriftPolicy is the part of the catalog that decides what of a
// backend's live resources, templates and prompts clients see (the
// reviewed lists under drift: pin) and says how each backend is
// reviewed; *catalog.Catalog is one. A Catalog without it, or none,
// serves the live lists.
type DriftPolicy interface {
	ServeOffer(name string, live catalog.Offer) catalog.Offer
	Review(name string) (review string, mode config.DriftMode)
}

func (s *Server) driftPolicy() DriftPolicy {
	p, _ := s.opts.Catalog.(DriftPolicy)
	return p
}

// serveOffer is what clients see of a backend's live offer.
func (s *Server) serveOffer(name string, o offer) offer {
	p := s.driftPolicy()
	if p == nil {
		return o
	}
	out := p.ServeOffer(name, catalog.Offer{Resources: o.resources, Templates: o.templates, Prompts: o.prompts})
	return offer{out.Resources, out.Templates, out.Prompts}
}

// driftView is a backend's drift in kiln://backends: what differs, which
// version clients get and, under pin, what is held back and how a person
// accepts it.
type driftView struct {
	Since   string `json:"since,omitempty"`
	Summary string `json:"summary"`
	Mode    string `json:"mode,omitempty"`
	// Served is "reviewed" under pin (the compiled manifest's tools,
	// resources and prompts) and "live" otherwise.
	Served   string   `json:"served"`
	HeldBack []string `json:"held_back,omitempty"`
	Accept   string   `json:"accept,omitempty"`
}

func newDriftView(d catalog.Drift) *driftView {
	v := &driftView{Since: stamp(d.Since), Summary: d.String(), Mode: string(d.Mode), Served: "live"}
	if d.Mode != config.DriftPin {
		if d.Mode == config.DriftWarn {
			v.Accept = "review with `kiln-gen diff`, record and compile it in with `" + catalog.AcceptCommand + "`"
		}
		return v
	}
	v.Served = "reviewed"
	for _, t := range d.Added {
		v.HeldBack = append(v.HeldBack, "tool "+t+" (new: not listed, searchable or callable)")
	}
	for _, t := range d.Changed {
		v.HeldBack = append(v.HeldBack, "tool "+t+" (changed: served as reviewed)")
	}
	if o := d.Offer; o != nil {
		for _, it := range o.Added {
			v.HeldBack = append(v.HeldBack, it+" (new: not listed)")
		}
		for _, it := range o.Changed {
			v.HeldBack = append(v.HeldBack, it+" (changed: listed as reviewed)")
		}
	}
	slices.Sort(v.HeldBack)
	v.Accept = "review with `kiln-gen diff`, accept with `" + catalog.AcceptCommand + "`, then rebuild and restart kiln"
	return v
}
