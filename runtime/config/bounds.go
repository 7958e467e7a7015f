package config

import (
	"strconv"
	"strings"
	"time"
)

// bound is the range a numeric setting may take. Values outside it are
// mistakes, not wishes: a 1ms health interval pings every backend a
// thousand times a second, a 1-byte output cap leaves nothing to read.
type bound struct {
	// min and max in the key's unit: nanoseconds for durations, bytes for
	// sizes, a plain count otherwise.
	min, max int64
}

// bounds holds every bounded key, by key path; "*" stands for a backend
// name. A key not listed is only checked for being positive.
var bounds = map[string]bound{
	"gateway.call_timeout":    durations(100*time.Millisecond, 24*time.Hour),
	"gateway.connect_timeout": durations(time.Second, time.Hour),
	"gateway.max_output_size": {1000, 50_000_000},
	"gateway.drain_timeout":   durations(time.Second, time.Hour),

	"gateway.sandbox.timeout":        durations(100*time.Millisecond, time.Hour),
	"gateway.sandbox.max_timeout":    durations(100*time.Millisecond, time.Hour),
	"gateway.sandbox.memory":         {4 << 20, 4 << 30},
	"gateway.sandbox.max_calls":      {1, 10_000},
	"gateway.sandbox.max_concurrent": {1, 1024},
	"gateway.sandbox.queue_wait":     durations(10*time.Millisecond, 10*time.Minute),

	"gateway.output.intent_threshold": {100, 50_000_000},
	"gateway.output.chunk_threshold":  {100, 50_000_000},
	"gateway.output.truncate_at":      {100, 50_000_000},

	"gateway.health.interval": durations(time.Second, 24*time.Hour),
	"gateway.health.timeout":  durations(100*time.Millisecond, time.Hour),
	"gateway.health.failures": {1, 100},

	"gateway.registration.max_backends":       {1, 1000},
	"gateway.http.max_body":                   {1 << 10, 1 << 30},
	"gateway.http.max_sessions":               {1, 10_000},
	"gateway.http.max_sessions_total":         {1, 100_000},
	"gateway.http.session_idle":               durations(time.Second, 24*time.Hour),
	"gateway.http.max_connections":            {1, 1_000_000},
	"gateway.http.max_connections_per_client": {1, 1_000_000},
	"gateway.http.read_timeout":               durations(100*time.Millisecond, time.Hour),
	"gateway.semantic.threads":                {1, 256},

	"backends.*.timeout":        durations(100*time.Millisecond, 24*time.Hour),
	"backends.*.max_concurrent": {1, 10_000},
	"backends.*.queue_wait":     durations(10*time.Millisecond, 10*time.Minute),
	"backends.*.max_output":     {100, 50_000_000},
}

func durations(lo, hi time.Duration) bound { return bound{int64(lo), int64(hi)} }

// boundOf returns the bound of a key path, if it has one.
func boundOf(key string) (bound, bool) {
	if rest, ok := strings.CutPrefix(key, "backends."); ok {
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			key = "backends.*" + rest[i:]
		}
	}
	b, ok := bounds[key]
	return b, ok
}

// unit says how a bounded value is measured and written.
type unit int

const (
	unitCount unit = iota
	unitDuration
	unitSize
)

func (u unit) show(n int64) string {
	switch u {
	case unitDuration:
		return showDuration(n)
	case unitSize:
		return showSize(n)
	}
	return showCount(n)
}

// inBound reports whether n lies in v's key's range, reporting it with the
// range when it does not.
func (c *checker) inBound(v value, n int64, u unit) bool {
	b, ok := boundOf(v.key)
	if !ok {
		return true
	}
	small, large := "too small", "too large"
	if u == unitDuration {
		small, large = "too short", "too long"
	}
	var what string
	switch {
	case n < b.min:
		what = small
	case n > b.max:
		what = large
	default:
		return true
	}
	got := strconv.Quote(v.raw)
	if s := strings.TrimSpace(v.s); s != strings.TrimSpace(v.raw) {
		got += " (" + s + ")"
	}
	c.p.addValue(v, "%s is %s; use %s to %s", got, what, u.show(b.min), u.show(b.max))
	return false
}

// showDuration renders a bound duration the way a config writes it.
func showDuration(n int64) string {
	s := time.Duration(n).String()
	// 1h0m0s reads better as 1h, 10m0s as 10m.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// showSize renders a bound size in the largest binary unit that divides it.
func showSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// showCount renders a bound count with thousands separators.
func showCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
