package pipeline

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// Limits of the JSON summaries. They keep a summary of a multi-megabyte
// document within the default TruncateAt, so truncation rarely cuts one.
const (
	firstItems  = 3    // items a uniform array shows in full, at most
	firstBudget = 8192 // bytes of them, past the first item
	maxIDs      = 200  // identities listed before the rest are only counted
	idClip      = 64   // bytes of a string identity shown
	inlineMax   = 200  // values up to this size are shown whole
	previewClip = 120  // bytes of a long string shown
	groupSize   = 5    // array items per key-path chunk, as in the seed's "[0-4]"
	maxDepth    = 8    // deeper containers are described, not walked
	maxChunks   = 300  // chunks listed before the rest are only counted
	maxKeys     = 20   // keys listed for a described object
)

// identityFields label array items, most telling first (the seed's order).
var identityFields = []string{"id", "name", "title", "slug", "key", "label"}

// chunkJSON replaces a JSON object or array with a summary that is itself
// valid JSON, one entry per line so a later truncation cuts between entries.
// It tries the uniform-array collapse, then key-path chunking; text that is
// not JSON, or that yields one chunk or a summary no smaller than itself,
// is returned unchanged.
func chunkJSON(s string) (string, bool) {
	t, ok := parseContainer(s)
	if !ok {
		return s, false
	}
	return chunkDoc(s, t)
}

// chunkDoc is chunkJSON for s whose trimmed form t is known valid JSON.
func chunkDoc(s, t string) (string, bool) {
	if out, ok := collapseUniform(t); ok && len(out) < len(s) {
		return out, true
	}
	if out, ok := chunkPaths(t); ok && len(out) < len(s) {
		return out, true
	}
	return s, false
}

// collapseUniform summarizes an array whose items are objects with the same
// key set:
//
//	{"kiln_summary":"…","count":N,"keys":[…],"first":[
//	item0,
//	item1,
//	item2],
//	"identity_key":"id","remaining_ids":[…],"remaining_ids_omitted":K}
//
// Fewer than three items are shown when they would pass firstBudget (one
// always is). identity_key and remaining_ids are left out when the items
// have no identity field; remaining_ids_omitted only appears past maxIDs.
func collapseUniform(t string) (string, bool) {
	if t[0] != '[' {
		return "", false
	}
	var keys []string
	seen := map[string]bool{}
	n := 0
	for e := range jsontext.Elements(t) {
		if e[0] != '{' {
			return "", false
		}
		m := 0
		for k := range jsontext.Members(e) {
			if n == 0 && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			} else if !seen[k] {
				return "", false
			}
			m++
		}
		if m != len(keys) {
			return "", false
		}
		n++
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = jsontext.DecodeString(k)
	}
	idKey := ""
	for _, f := range identityFields {
		if i := slices.Index(names, f); i >= 0 {
			idKey = keys[i]
			break
		}
	}
	var first, ids []string
	size := 0
	for e := range jsontext.Elements(t) {
		switch {
		case len(ids) == 0 && len(first) < firstItems && (len(first) == 0 || size+len(e) <= firstBudget):
			first = append(first, e)
			size += len(e)
		case idKey == "" || len(ids) == maxIDs:
			// Only counting from here on.
		default:
			ids = append(ids, memberValue(e, idKey))
		}
	}
	if n <= len(first) {
		return "", false
	}

	var b bytes.Buffer
	b.WriteString(`{"kiln_summary":`)
	b.Write(appendJSONString(nil, uniformSummary(n, len(first), jsontext.DecodeString(idKey))))
	b.WriteString(`,"count":` + strconv.Itoa(n) + `,"keys":[`)
	for i, k := range names {
		b.WriteString(sep(i, "", ","))
		b.Write(appendJSONString(b.AvailableBuffer(), k))
	}
	b.WriteString(`],"first":[` + "\n")
	for i, e := range first {
		b.WriteString(sep(i, "", ",\n"))
		compact(&b, e)
	}
	b.WriteString("]")
	if idKey != "" {
		b.WriteString(",\n" + `"identity_key":`)
		b.Write(appendJSONString(b.AvailableBuffer(), jsontext.DecodeString(idKey)))
		b.WriteString(`,"remaining_ids":[`)
		for i, id := range ids {
			b.WriteString(sep(i, "", ","))
			writeIdentity(&b, id)
		}
		b.WriteByte(']')
		if rest := n - len(first) - len(ids); rest > 0 {
			b.WriteString(`,"remaining_ids_omitted":` + strconv.Itoa(rest))
		}
	}
	b.WriteByte('}')
	return b.String(), true
}

func uniformSummary(n, shown int, idKey string) string {
	s := "Array of " + strconv.Itoa(n) + " objects that all have the same keys, collapsed: the first " +
		strconv.Itoa(shown) + " in full"
	if idKey != "" {
		s += ", the other " + strconv.Itoa(n-shown) + " by their " + strconv.Quote(idKey)
	} else {
		s += "; the other " + strconv.Itoa(n-shown) + " have no id, name, title, slug, key or label"
	}
	return s + ". Index the array in a call_tool_chain script to read more items."
}

func sep(i int, first, rest string) string {
	if i == 0 {
		return first
	}
	return rest
}

// memberValue returns the value of the raw key in object e, or "".
func memberValue(e, rawKey string) string {
	for k, v := range jsontext.Members(e) {
		if k == rawKey {
			return v
		}
	}
	return ""
}

// identity returns the value of the item's most telling identity field, or
// the item itself when it is a scalar; "" when it has none.
func identity(e string) string {
	switch e[0] {
	case '[':
		return ""
	case '{':
		best, val := len(identityFields), ""
		for k, v := range jsontext.Members(e) {
			if v[0] == '{' || v[0] == '[' {
				continue
			}
			if i := slices.Index(identityFields, jsontext.DecodeString(k)); i >= 0 && i < best {
				best, val = i, v
			}
		}
		return val
	}
	return e
}

// writeIdentity writes a scalar identity, clipping long strings so one
// verbose title cannot dominate the summary; anything else becomes null.
func writeIdentity(b *bytes.Buffer, v string) {
	switch {
	case v == "" || v[0] == '{' || v[0] == '[':
		b.WriteString("null")
	case v[0] == '"':
		b.Write(appendJSONString(b.AvailableBuffer(), clip(jsontext.DecodeString(v), idClip)))
	default:
		b.WriteString(v)
	}
}

// chunkPaths is key-path chunking. Its output:
//
//	{"kiln_summary":"…","chunks":[
//	{"path":"total","value":1234},
//	{"path":"results > items > [0-4]","bytes":5120,"ids":["a","b","c","d","e"]},
//	{"path":"results > readme","bytes":9000,"preview":"…"},
//	{"path":"…","omitted_chunks":12}]}
//
// Values up to inlineMax bytes are shown whole; longer strings get a
// preview; objects are walked key by key; arrays of two or more items are
// listed in groups of groupSize labelled by identity ("values" for scalar
// items, and the first item's keys when no item has an identity); past maxDepth a container is described by its
// size and keys or item count.
func chunkPaths(t string) (string, bool) {
	c := &pathChunker{}
	c.walk(t, 0)
	if c.chunks+c.omitted <= 1 {
		return "", false
	}
	if c.omitted > 0 {
		c.body.WriteString(",\n" + `{"path":"…","omitted_chunks":` + strconv.Itoa(c.omitted) + "}")
	}
	kind := "object"
	if t[0] == '[' {
		kind = "array"
	}
	summary := "JSON " + kind + " of " + kb(len(t)) + " split by key path into " +
		strconv.Itoa(c.chunks+c.omitted) + " chunks: values up to " + strconv.Itoa(inlineMax) +
		" bytes in full, long strings as a preview, arrays in groups of " + strconv.Itoa(groupSize) +
		" labelled by id, name, title, slug, key or label. Read a path in a call_tool_chain script to get it in full."
	var b bytes.Buffer
	b.Grow(c.body.Len() + len(summary) + 32)
	b.WriteString(`{"kiln_summary":`)
	b.Write(appendJSONString(b.AvailableBuffer(), summary))
	b.WriteString(`,"chunks":[` + "\n")
	b.Write(c.body.Bytes())
	b.WriteString("]}")
	return b.String(), true
}

type pathChunker struct {
	body    bytes.Buffer
	path    []string
	chunks  int
	omitted int
}

func (c *pathChunker) walk(v string, depth int) {
	switch {
	case len(v) <= inlineMax || (v[0] != '"' && v[0] != '{' && v[0] != '['):
		if b := c.open(); b != nil {
			b.WriteString(`,"value":`)
			compact(b, v)
			c.close()
		}
	case v[0] == '"':
		if b := c.open(); b != nil {
			b.WriteString(`,"bytes":` + strconv.Itoa(len(v)) + `,"preview":`)
			b.Write(appendJSONString(b.AvailableBuffer(), clip(jsontext.DecodeString(v), previewClip)))
			c.close()
		}
	case v[0] == '{' && depth < maxDepth:
		for k, m := range jsontext.Members(v) {
			c.path = append(c.path, jsontext.DecodeString(k))
			c.walk(m, depth+1)
			c.path = c.path[:len(c.path)-1]
		}
	case v[0] == '{':
		if b := c.open(); b != nil {
			b.WriteString(`,"bytes":` + strconv.Itoa(len(v)) + `,"keys":`)
			writeKeys(b, v)
			c.close()
		}
	default:
		c.walkArray(v, depth)
	}
}

func (c *pathChunker) walkArray(v string, depth int) {
	n := count(jsontext.Elements(v))
	if n == 1 && depth < maxDepth {
		for e := range jsontext.Elements(v) {
			c.path = append(c.path, "[0]")
			c.walk(e, depth+1)
			c.path = c.path[:len(c.path)-1]
		}
		return
	}
	if depth >= maxDepth {
		if b := c.open(); b != nil {
			b.WriteString(`,"bytes":` + strconv.Itoa(len(v)) + `,"count":` + strconv.Itoa(n))
			c.close()
		}
		return
	}
	group := make([]string, 0, groupSize)
	i := 0
	flush := func() {
		if len(group) == 0 {
			return
		}
		c.path = append(c.path, "["+strconv.Itoa(i-len(group))+"-"+strconv.Itoa(i-1)+"]")
		if b := c.open(); b != nil {
			writeGroup(b, group)
			c.close()
		}
		c.path = c.path[:len(c.path)-1]
		group = group[:0]
	}
	for e := range jsontext.Elements(v) {
		group = append(group, e)
		i++
		if len(group) == groupSize {
			flush()
		}
	}
	flush()
}

// open starts a chunk line and returns the buffer to finish it in, or nil
// once maxChunks lines exist and the chunk is only counted.
func (c *pathChunker) open() *bytes.Buffer {
	if c.chunks == maxChunks {
		c.omitted++
		return nil
	}
	if c.chunks > 0 {
		c.body.WriteString(",\n")
	}
	c.chunks++
	c.body.WriteString(`{"path":`)
	c.body.Write(appendJSONString(c.body.AvailableBuffer(), strings.Join(c.path, " > ")))
	return &c.body
}

func (c *pathChunker) close() { c.body.WriteByte('}') }

func writeGroup(b *bytes.Buffer, group []string) {
	size := 0
	ids := make([]string, len(group))
	found := false
	for i, e := range group {
		size += len(e)
		ids[i] = identity(e)
		found = found || ids[i] != ""
	}
	b.WriteString(`,"bytes":` + strconv.Itoa(size))
	switch {
	case found:
		// Scalars are their own identity; calling them ids would mislead.
		if group[0][0] == '{' {
			b.WriteString(`,"ids":[`)
		} else {
			b.WriteString(`,"values":[`)
		}
		for i, id := range ids {
			b.WriteString(sep(i, "", ","))
			writeIdentity(b, id)
		}
		b.WriteByte(']')
	case group[0][0] == '{':
		b.WriteString(`,"keys":`)
		writeKeys(b, group[0])
	}
}

func writeKeys(b *bytes.Buffer, obj string) {
	b.WriteByte('[')
	n := 0
	for k := range jsontext.Members(obj) {
		if n == maxKeys {
			b.WriteString(`,"…"`)
			break
		}
		b.WriteString(sep(n, "", ","))
		b.Write(appendJSONString(b.AvailableBuffer(), jsontext.DecodeString(k)))
		n++
	}
	b.WriteByte(']')
}
