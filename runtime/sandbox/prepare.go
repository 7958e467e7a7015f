package sandbox

import (
	"fmt"

	"github.com/dop251/goja"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// prepared is a runtime that ran harden.js and the compiled preamble and
// nothing else. Preparing one costs most of a run (about 1 ms for the
// hardening and 0.5–1 ms for a preamble of 200 tools), so a few are kept
// warm and each is used by exactly one run: isolation is unchanged, the
// cost just leaves the request path.
type prepared struct {
	rt *goja.Runtime
	// owner is the run using the runtime; the host natives forward to it.
	owner      *run
	helpers    *goja.Object
	parse      goja.Callable
	newError   func(string) *goja.Object
	rangeError goja.Constructor
}

// takeRuntime returns a warm runtime, or prepares one when none is ready.
// Run refills the pool after the script finished, so the preparation does
// not compete with the script for the CPU.
func (s *Sandbox) takeRuntime() (*prepared, error) {
	select {
	case p := <-s.warm:
		return p, nil
	default:
		return s.prepare()
	}
}

// refill starts one background preparation unless enough are under way.
func (s *Sandbox) refill() {
	if cap(s.warm) == 0 || int(s.refilling.Add(1)) > cap(s.warm) {
		s.refilling.Add(-1)
		return
	}
	go func() {
		defer s.refilling.Add(-1)
		p, err := s.prepare()
		if err != nil {
			s.log.Error("sandbox: prepare a runtime", "err", err)
			return
		}
		select {
		case s.warm <- p:
		default:
		}
	}()
}

func (s *Sandbox) prepare() (*prepared, error) {
	p, err := s.harden()
	if err != nil {
		return nil, err
	}
	if err := s.loadPreamble(p); err != nil {
		return nil, err
	}
	return p, nil
}

// harden returns a runtime that ran harden.js, without the preamble.
func (s *Sandbox) harden() (*prepared, error) {
	rt := goja.New()
	rt.SetMaxCallStackSize(s.lim.MaxCallStack)
	p := &prepared{rt: rt}
	errorCtor, _ := goja.AssertConstructor(rt.Get("Error"))
	p.rangeError, _ = goja.AssertConstructor(rt.Get("RangeError"))
	p.newError = func(msg string) *goja.Object {
		o, err := errorCtor(nil, rt.ToValue(msg))
		if err != nil {
			return rt.NewTypeError(msg)
		}
		return o
	}
	hp, err := hardenProgram()
	if err != nil {
		return nil, err
	}
	fv, err := rt.RunProgram(hp)
	if err != nil {
		return nil, err
	}
	harden, _ := goja.AssertFunction(fv)
	lim := s.lim
	limits := map[string]any{
		"maxArray": lim.MaxArray, "maxString": lim.MaxString, "maxPattern": 32 << 10,
		"regexpTimeoutMs": regexpTimeoutMs(), "maxBind": 64, "maxDepth": maxJSONDepth,
		"maxLog": lim.MaxLogBytes, "maxArgs": lim.MaxArgBytes,
	}
	host := rt.NewObject()
	for name, fn := range map[string]func(goja.FunctionCall) goja.Value{
		"call":      func(fc goja.FunctionCall) goja.Value { return p.owner.nativeCall(fc) },
		"log":       func(fc goja.FunctionCall) goja.Value { return p.owner.nativeLog(fc) },
		"jsonDepth": func(fc goja.FunctionCall) goja.Value { return rt.ToValue(jsontext.Depth(fc.Argument(0).String(), 0)) },
		"join": func(fc goja.FunctionCall) goja.Value {
			return p.owner.join(fc.Argument(0).ToObject(rt), fc.Argument(1).ToInteger(), fc.Argument(2), int(fc.Argument(3).ToInteger()))
		},
		"stringify": func(fc goja.FunctionCall) goja.Value {
			var keys []string
			if list, ok := fc.Argument(3).(*goja.Object); ok {
				if err := rt.ExportTo(list, &keys); err != nil {
					panic(rt.NewTypeError("bad property list"))
				}
				if keys == nil {
					keys = []string{}
				}
			}
			return p.owner.stringifyJSON(fc.Argument(0), fc.Argument(1), int(fc.Argument(2).ToInteger()), keys)
		},
	} {
		if err := host.Set(name, fn); err != nil {
			return nil, err
		}
	}
	hv, err := harden(goja.Undefined(), rt.ToValue(limits), host)
	if err != nil {
		return nil, fmt.Errorf("harden: %w", err)
	}
	p.helpers = hv.ToObject(rt)
	p.parse, _ = goja.AssertFunction(p.helpers.Get("parse"))
	return p, nil
}

func (s *Sandbox) loadPreamble(p *prepared) error {
	if s.preamble.prg != nil {
		if _, err := p.rt.RunProgram(s.preamble.prg); err != nil {
			return fmt.Errorf("preamble: %w", err)
		}
	}
	return nil
}

// globalNames lists the own properties of a runtime's global object.
func globalNames(rt *goja.Runtime) map[string]bool {
	names := map[string]bool{}
	for _, n := range rt.GlobalObject().GetOwnPropertyNames() {
		names[n] = true
	}
	return names
}
