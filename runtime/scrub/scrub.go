package scrub

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinValueLen is the shortest known secret value Options.Values redacts.
// Config env and header values include things like "true", "8080", "info"
// and user names; redacting every occurrence of those would shred ordinary
// text (every "true" in a JSON result) without protecting anything, and a
// real credential is essentially never shorter than eight bytes.
const MinValueLen = 8

// Value is one secret the config knows verbatim, such as the value of a
// backend's GITHUB_TOKEN env var or of an Authorization header.
type Value struct {
	// Name labels the redaction: [REDACTED:env:Name].
	Name string
	// Value is the exact secret text to find.
	Value string
}

// Options configures a Scrubber. The zero value recognises secret shapes
// only.
type Options struct {
	// Values are secrets redacted wherever they appear, whatever their
	// shape. Values shorter than MinValueLen are ignored; of two entries
	// with the same Value the first one names the redaction.
	Values []Value
}

// Stats counts redactions by type name, such as "github-token" or
// "env:GITHUB_TOKEN". A nil Stats means nothing was redacted.
type Stats map[string]int

// Scrubber replaces secrets in text, JSON and tool results with
// [REDACTED:<type>] markers. Build one with New and share it: it is
// immutable after New apart from its atomic counters, so it is safe for
// concurrent use. A nil *Scrubber passes everything through unchanged, so
// callers need no branches when scrubbing is off; a zero Scrubber
// recognises shapes only, like New(Options{}).
type Scrubber struct {
	values []Value
	// flags is the scan table with fValue set on the first byte of every
	// value, or nil for the shared table when there are no values; byFirst
	// lists the values (longest first) starting with each byte.
	flags   *[256]uint8
	byFirst [256][]int
	heads   []uint64 // by value: its first eight bytes, see valueAt
	// Per known value: its type name ("env:NAME") and marker.
	valueNames, valueMarkers []string

	totals      [numKinds]atomic.Int64
	valueTotals []atomic.Int64

	// learned holds the values Learn added after New; learnMu serializes
	// Learn.
	learned atomic.Pointer[learnedSet]
	learnMu sync.Mutex
}

// learnedSet is append-only: a later set extends an earlier one, so the
// kind a scan gave a span names the same value in whatever set apply sees.
type learnedSet struct {
	values  []Value
	markers []string
	totals  []*atomic.Int64
}

// Learn adds secret values to redact from now on: those a config reload or
// a backend registered at run time brings. It is safe while the scrubber is
// in use. Values shorter than MinValueLen or already known are ignored.
func (sc *Scrubber) Learn(values ...Value) {
	if sc == nil {
		return
	}
	sc.learnMu.Lock()
	defer sc.learnMu.Unlock()
	next := &learnedSet{}
	if old := sc.learned.Load(); old != nil {
		next.values, next.markers, next.totals = slices.Clone(old.values), slices.Clone(old.markers), slices.Clone(old.totals)
	}
	known := map[string]bool{}
	for _, v := range sc.values {
		known[v.Value] = true
	}
	for _, v := range next.values {
		known[v.Value] = true
	}
	added := false
	for _, v := range withEscaped(values) {
		if len(v.Value) < MinValueLen || known[v.Value] {
			continue
		}
		known[v.Value] = true
		next.values = append(next.values, v)
		next.markers = append(next.markers, "[REDACTED:env:"+v.Name+"]")
		next.totals = append(next.totals, new(atomic.Int64))
		added = true
	}
	if added {
		sc.learned.Store(next)
	}
}

// findLearned appends a span for every occurrence of a learned value.
// Learned values are few, so a plain search per value is enough.
func (sc *Scrubber) findLearned(s string, spans []span) []span {
	l := sc.learned.Load()
	if l == nil {
		return spans
	}
	base := numKinds + kind(len(sc.values))
	for j, v := range l.values {
		for off := 0; ; {
			i := strings.Index(s[off:], v.Value)
			if i < 0 {
				break
			}
			spans = append(spans, span{off + i, off + i + len(v.Value), base + kind(j)})
			off += i + len(v.Value)
		}
	}
	return spans
}

// marker returns the replacement text of k.
func (sc *Scrubber) marker(k kind) string {
	switch {
	case k < numKinds:
		return kindMarkers[k]
	case int(k-numKinds) < len(sc.values):
		return sc.valueMarkers[k-numKinds]
	}
	return sc.learned.Load().markers[int(k-numKinds)-len(sc.values)]
}

// kindMarkers are the markers of the shape kinds, built once.
var kindMarkers = func() (m [numKinds]string) {
	for k, name := range kindNames {
		m[k] = "[REDACTED:" + name + "]"
	}
	return m
}()

// name returns the type name of k.
func (sc *Scrubber) name(k kind) string {
	switch {
	case k < numKinds:
		return kindNames[k]
	case int(k-numKinds) < len(sc.values):
		return sc.valueNames[k-numKinds]
	}
	return "env:" + sc.learned.Load().values[int(k-numKinds)-len(sc.values)].Name
}

// total returns the counter of k.
func (sc *Scrubber) total(k kind) *atomic.Int64 {
	switch {
	case k < numKinds:
		return &sc.totals[k]
	case int(k-numKinds) < len(sc.values):
		return &sc.valueTotals[k-numKinds]
	}
	return sc.learned.Load().totals[int(k-numKinds)-len(sc.values)]
}

// New compiles opts into a Scrubber.
func New(opts Options) *Scrubber {
	sc := &Scrubber{}
	seen := map[string]bool{}
	for _, v := range withEscaped(opts.Values) {
		if len(v.Value) < MinValueLen || seen[v.Value] {
			continue
		}
		seen[v.Value] = true
		sc.values = append(sc.values, v)
	}
	// Longest first, so a value that is a prefix of another never hides it.
	slices.SortStableFunc(sc.values, func(a, b Value) int { return len(b.Value) - len(a.Value) })
	if len(sc.values) > 0 {
		t := flags
		sc.flags = &t
		for i, v := range sc.values {
			sc.flags[v.Value[0]] |= fValue
			sc.byFirst[v.Value[0]] = append(sc.byFirst[v.Value[0]], i)
			sc.heads = append(sc.heads, load64(v.Value))
			sc.valueNames = append(sc.valueNames, "env:"+v.Name)
			sc.valueMarkers = append(sc.valueMarkers, "[REDACTED:env:"+v.Name+"]")
		}
	}
	sc.valueTotals = make([]atomic.Int64, len(sc.values))
	return sc
}

// String returns s with every secret replaced by its marker.
func (sc *Scrubber) String(s string) string {
	out, _ := sc.text(s)
	return out
}

// Scrub is String that also reports what it redacted, for callers that
// surface per-call counts.
func (sc *Scrubber) Scrub(s string) (string, Stats) {
	if sc == nil {
		return s, nil
	}
	spans, _ := sc.scan(s, nil)
	var st Stats
	for _, sp := range spans {
		if st == nil {
			st = Stats{}
		}
		st[sc.name(sp.k)]++
	}
	sc.count(spans)
	return sc.apply(s, spans), st
}

// Totals returns the redactions counted since New, across every method,
// for kiln://stats.
func (sc *Scrubber) Totals() Stats {
	if sc == nil {
		return nil
	}
	var st Stats
	n := int(numKinds) + len(sc.values)
	if l := sc.learned.Load(); l != nil {
		n += len(l.values)
	}
	for k := range kind(n) {
		if n := sc.total(k).Load(); n > 0 {
			if st == nil {
				st = Stats{}
			}
			st[sc.name(k)] = int(n)
		}
	}
	return st
}

// text scrubs s; pemOpen reports a private key block still open at the end
// of s, which the line Writer needs to keep redacting the following lines.
func (sc *Scrubber) text(s string) (out string, pemOpen bool) {
	if sc == nil {
		return s, false
	}
	spans, open := sc.scan(s, nil)
	sc.count(spans)
	return sc.apply(s, spans), open
}

// count adds spans to the totals.
func (sc *Scrubber) count(spans []span) {
	for _, sp := range spans {
		sc.total(sp.k).Add(1)
	}
}

// apply writes s with spans replaced by markers. spans must
// be sorted and disjoint, as scan returns them.
func (sc *Scrubber) apply(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(sc.marker(sp.k))
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// withEscaped adds, under the same name, the forms a value takes inside
// JSON text (quotes and backslashes escaped, and <, > and & too, as
// encoding/json writes them): a resource or result that is JSON holds the
// escaped form, which the plain value would not match.
func withEscaped(values []Value) []Value {
	out := values
	for _, v := range values {
		for _, html := range []bool{false, true} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(v.Value) != nil {
				continue
			}
			q := strings.TrimSuffix(b.String(), "\n")
			if e := q[1 : len(q)-1]; e != v.Value {
				out = append(out, Value{Name: v.Name, Value: e})
			}
		}
	}
	return out
}
