package config

import (
	"strconv"
	"strings"
	"time"
)

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
