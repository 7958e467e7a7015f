package config

import (
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/kilnmcp/kiln/runtime/pipeline"
)

// sandbox checks gateway.sandbox. An absent key stays zero so the sandbox
// applies its own default, which the config does not duplicate.
func (b *builder) sandbox() Sandbox {
	get := func(k string) value { return b.expand(b.l.get("gateway.sandbox." + k)) }
	var s Sandbox
	s.Timeout = b.duration(get("timeout"), 0)
	maxV := get("max_timeout")
	s.MaxTimeout = b.duration(maxV, 0)
	if s.Timeout > 0 && s.MaxTimeout > 0 && s.MaxTimeout < s.Timeout {
		// The sandbox would quietly raise the cap to the timeout; a config
		// that says otherwise is more likely a slip than a wish.
		b.p.addValue(maxV, "%s is shorter than gateway.sandbox.timeout (%s); raise max_timeout to at least %s or lower timeout",
			strconv.Quote(maxV.raw), s.Timeout, s.Timeout)
	}
	def := SandboxDefaults()
	s.MemoryBytes = b.size(get("memory"), keyIndex["gateway.sandbox.memory"].def)
	s.MaxCalls = b.positive(get("max_calls"), 0, def.MaxCalls)
	s.MaxConcurrent = b.positive(get("max_concurrent"), 0, def.MaxConcurrent)
	// Positive like every duration: the sandbox reads 0 as "use the
	// default", so an explicit 0s would silently mean 2s.
	s.QueueWait = b.duration(get("queue_wait"), 0)
	return s
}

// output checks gateway.output; thresholds left out stay zero for the
// pipeline's defaults, whose values the hints quote.
func (b *builder) output(def Output) Output {
	get := func(k string) value { return b.expand(b.l.get("gateway.output." + k)) }
	return Output{
		IntentFilter:    b.boolean(get("intent_filter"), def.IntentFilter),
		AutoChunkJSON:   b.boolean(get("auto_chunk_json"), def.AutoChunkJSON),
		SmartTruncation: b.boolean(get("smart_truncation"), def.SmartTruncation),
		SizeFooter:      b.boolean(get("size_footer"), def.SizeFooter),
		IntentThreshold: b.positive(get("intent_threshold"), def.IntentThreshold, pipeline.DefaultIntentThreshold),
		ChunkThreshold:  b.positive(get("chunk_threshold"), def.ChunkThreshold, pipeline.DefaultChunkThreshold),
		TruncateAt:      b.positive(get("truncate_at"), def.TruncateAt, pipeline.DefaultTruncateAt),
	}
}

// size parses a positive size in bytes, or returns 0; example goes in the
// hint.
func (c *checker) size(v value, example string) int64 {
	if !v.ok || v.bad {
		return 0
	}
	n, err := parseSize(v.s)
	q := strconv.Quote(v.raw)
	var frac fractionError
	switch {
	case err == nil:
		if !c.inBound(v, n, unitSize) {
			return 0
		}
		return n
	case errors.Is(err, errSizeZero):
		c.p.addValue(v, "must be positive, got %s; use e.g. %s", q, example)
	case errors.Is(err, errSizeRange):
		c.p.addValue(v, "size %s is too large; use e.g. %s", q, example)
	case errors.As(err, &frac):
		c.p.addValue(v, "size %s is not a whole number of bytes; write %d (bytes) or use a larger unit", q, frac.floor)
	default:
		msg := "invalid size " + q + "; use bytes or a number with " + listOr(sizeUnitNames)
		if m := sizeRE.FindStringSubmatch(strings.TrimSpace(v.s)); m != nil {
			if u, ok := sizeUnitHints[strings.ToLower(m[2])]; ok {
				msg += " (did you mean " + m[1] + u + "?)"
			}
		}
		c.p.addValue(v, "%s", msg)
	}
	return 0
}

var (
	errSizeSyntax = errors.New("invalid size")
	errSizeZero   = errors.New("size is zero")
	errSizeRange  = errors.New("size out of range")
)

// fractionError reports a size that falls between two byte counts.
type fractionError struct{ floor int64 }

func (e fractionError) Error() string { return "size is not a whole number of bytes" }

// sizeRE splits a size into its number and unit; the space between them is
// optional, as people write both "50MiB" and "50 MiB".
var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

// sizeUnitNames are the units a size may carry, as the hints spell them.
var sizeUnitNames = []string{"B", "KB", "KiB", "MB", "MiB", "GB", "GiB"}

// sizeUnits maps a lowercased unit to its bytes. Units are matched without
// regard to case ("50mib"); none names bits, so nothing is ambiguous.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "kib": 1 << 10,
	"mb": 1e6, "mib": 1 << 20,
	"gb": 1e9, "gib": 1 << 30,
}

// sizeUnitHints maps the bare suffixes of docker and Kubernetes ("50m",
// "50Mi"), which mean binary units there, to ours.
var sizeUnitHints = map[string]string{
	"k": "KiB", "ki": "KiB", "m": "MiB", "mi": "MiB", "g": "GiB", "gi": "GiB",
}

// parseSize parses a byte count or a number with a unit. Arithmetic is
// exact (big.Rat) so "0.5KiB" is 512 and "0.3KiB", 307.2 bytes, is refused
// rather than rounded somewhere surprising.
func parseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, errSizeSyntax
	}
	mult, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, errSizeSyntax
	}
	r, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, errSizeSyntax
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	floor := new(big.Int).Quo(r.Num(), r.Denom())
	switch {
	case floor.Sign() == 0:
		return 0, errSizeZero
	case !floor.IsInt64():
		return 0, errSizeRange
	case !r.IsInt():
		return 0, fractionError{floor: floor.Int64()}
	}
	return floor.Int64(), nil
}
