package pipeline

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/textcut"
)

func TestIntentTerms(t *testing.T) {
	cases := []struct {
		intent string
		want   []string
	}{
		{"why did the database time out?", []string{"database", "time"}},
		{"Find ERROR timeout errors", []string{"error", "timeout", "errors"}},
		{"cache Cache CACHE", []string{"cache"}},
		{"user_id of x", []string{"user", "id"}},
		{"Größe über Ünïcode", []string{"größe", "über", "ünïcode"}},
		{"the a of to", nil},
		{"", nil},
	}
	for _, c := range cases {
		diff(t, strconv.Quote(c.intent), c.want, intentTerms(c.intent))
	}
}

func TestMentions(t *testing.T) {
	terms4 := []string{"alpha", "bravo", "cache", "deploy"}
	terms10 := strings.Fields("t0 t1 t2 t3 t4 t5 t6 t7 t8 t9")
	cases := []struct {
		text  string
		terms []string
		want  bool
	}{
		{"three errors found", []string{"error"}, true},         // word prefix
		{"provide a width", []string{"id"}, false},              // not at a word start
		{"user_id=7", []string{"id"}, true},                     // '_' separates words
		{"über alles", []string{"über"}, true},                  // non-ASCII word start
		{"alpha only", terms4, false},                           // 1 of 4 < 30%
		{"alpha and bravo", terms4, true},                       // 2 of 4 ≥ 30%
		{"alpha", terms4[:3], true},                             // 1 of 3 ≥ 30%
		{"t0 t1", terms10, false},                               // 2 of 10
		{"t0 t1 t2", terms10, true},                             // exactly 30%
		{"t0t1t2", terms10, false},                              // only t0 starts a word
		{"nothing here", []string{"database", "time"}, false},   // no match
		{"timeouts happen", []string{"database", "time"}, true}, // 1 of 2
	}
	for _, c := range cases {
		if got := mentions(c.text, c.terms); got != c.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", c.text, c.terms, got, c.want)
		}
	}
}

func TestIntentFilterText(t *testing.T) {
	o := DefaultOptions()
	o.Intent = "ERROR timeout"
	in := logText(7000)
	out, st := Text(in, o)
	body, trailer := splitTrailer(out)
	diff(t, "stages", []string{StageIntent, StageFooter}, st.Stages)
	if len(trailer) != 2 || !strings.HasPrefix(trailer[0], "[Intent filter: kept ") {
		t.Fatalf("trailer = %q", trailer)
	}
	// No blank lines, so sections are groups of 8 lines: a group is kept
	// exactly when one of its lines is an ERROR line.
	lines := strings.SplitAfter(strings.TrimSuffix(in, "\n"), "\n")
	var want []string
	omitted := 0
	for i := 0; i < len(lines); i += groupLines {
		group := strings.Join(lines[i:min(i+groupLines, len(lines))], "")
		if !strings.Contains(group, "ERROR") {
			omitted += countLines(group)
			continue
		}
		if omitted > 0 {
			want = append(want, "[... "+plural(omitted, "line")+" omitted ...]")
			omitted = 0
		}
		want = append(want, strings.TrimSuffix(group, "\n"))
	}
	if omitted > 0 {
		want = append(want, "[... "+plural(omitted, "line")+" omitted ...]")
	}
	diff(t, "body", strings.Join(want, "\n"), body)
}

func TestIntentFilterParagraphs(t *testing.T) {
	o := DefaultOptions()
	o.Intent = "database timeout"
	in := prose(8000)
	out, _ := Text(in, o)
	body, _ := splitTrailer(out)
	for _, p := range strings.Split(strings.TrimSpace(in), "\n\n") {
		kept := strings.Contains(body, p)
		if match := strings.Contains(p, "database") || strings.Contains(p, "timeout"); match != kept {
			t.Errorf("paragraph %.40q: kept = %v, mentions a term = %v", p, kept, match)
		}
	}
}

func TestIntentFilterUnchanged(t *testing.T) {
	in := prose(8000)
	cases := []struct {
		name string
		o    func(*Options)
	}{
		{"no term matches", func(o *Options) { o.Intent = "kubernetes" }},
		{"every section matches", func(o *Options) { o.Intent = "section" }},
		{"only stop words", func(o *Options) { o.Intent = "show me all of it" }},
		{"under threshold", func(o *Options) { o.Intent = "database"; o.IntentThreshold = 9000 }},
		{"toggled off", func(o *Options) { o.Intent = "database"; o.IntentFilter = false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			c.o(&o)
			out, st := Text(in, o)
			if out != in || len(st.Stages) != 0 {
				t.Errorf("output changed (stages %v)", st.Stages)
			}
		})
	}
}

func TestIntentFilterJSON(t *testing.T) {
	o := DefaultOptions()
	o.Intent = "cache replica"
	all := items(60)
	for _, wrap := range []bool{false, true} {
		in := mustJSON(all)
		if wrap {
			in = mustJSON(map[string]any{"total": 60, "data": map[string]any{"items": all}})
		}
		out, st := Text(in, o)
		body, trailer := splitTrailer(out)
		var got []item
		if wrap {
			var doc struct {
				Total int
				Data  struct{ Items []item }
			}
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("filtered JSON is invalid: %v", err)
			}
			got = doc.Data.Items
			diff(t, "total", 60, doc.Total)
		} else if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("filtered JSON is invalid: %v", err)
		}
		var want []item
		for _, it := range all {
			vals := strings.ToLower(it.Name + " " + strings.Join(it.Tags, " ") + " " + it.Notes)
			if strings.Contains(vals, "cache") || strings.Contains(vals, "replica") {
				want = append(want, it)
			}
		}
		diff(t, "items", want, got)
		diff(t, "stages", []string{StageIntent, StageFooter}, st.Stages)
		of := "of the top-level array"
		if wrap {
			of = "of data > items"
		}
		if !strings.Contains(trailer[0], "kept "+strconv.Itoa(len(want))+" of 60 items "+of) {
			t.Errorf("note = %q", trailer[0])
		}
	}
}

func TestErrorResultSkipsIntent(t *testing.T) {
	o := DefaultOptions()
	o.Intent = "database timeout"
	in := prose(8000)
	for _, isErr := range []bool{false, true} {
		r := toolcallText(in)
		r.IsError = isErr
		_, st := Result(r, o)
		if got := contains(st.Stages, StageIntent); got == isErr {
			t.Errorf("isError=%v: intent filter ran = %v", isErr, got)
		}
	}
}

func TestChunkUniform(t *testing.T) {
	type summary struct {
		Count        int
		Keys         []string
		First        []item
		IdentityKey  string            `json:"identity_key"`
		RemainingIDs []json.RawMessage `json:"remaining_ids"`
		Omitted      int               `json:"remaining_ids_omitted"`
	}
	for _, n := range []int{60, 250} {
		all := items(n)
		out, ok := chunkJSON(mustJSON(all))
		if !ok {
			t.Fatalf("n=%d: not chunked", n)
		}
		var got summary
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("n=%d: summary is invalid JSON: %v\n%s", n, err, out)
		}
		var ids []json.RawMessage
		for _, it := range all[firstItems:min(n, firstItems+maxIDs)] {
			ids = append(ids, json.RawMessage(strconv.Itoa(it.ID)))
		}
		want := summary{n, []string{"id", "name", "price", "tags", "notes"}, all[:3], "id", ids,
			max(0, n-firstItems-maxIDs)}
		diff(t, "summary", want, got)
	}
}

func TestChunkUniformFirstBudget(t *testing.T) {
	for _, c := range []struct{ noteBytes, wantFirst int }{{100, 3}, {3000, 2}, {5000, 1}, {20000, 1}} {
		all := items(10)
		for i := range all {
			all[i].Notes = strings.Repeat("n", c.noteBytes)
		}
		out, ok := chunkJSON(mustJSON(all))
		var got struct {
			Summary      string `json:"kiln_summary"`
			First        []item
			RemainingIDs []int `json:"remaining_ids"`
		}
		if err := json.Unmarshal([]byte(out), &got); !ok || err != nil {
			t.Fatalf("notes %d: ok=%v err=%v", c.noteBytes, ok, err)
		}
		diff(t, "first", all[:c.wantFirst], got.First)
		var ids []int
		for _, it := range all[c.wantFirst:] {
			ids = append(ids, it.ID)
		}
		diff(t, "remaining", ids, got.RemainingIDs)
		if !strings.Contains(got.Summary, "the first "+strconv.Itoa(c.wantFirst)+" in full, the other "+strconv.Itoa(10-c.wantFirst)+` by their "id"`) {
			t.Errorf("summary = %q", got.Summary)
		}
	}
}

func TestChunkUniformIdentity(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	cases := []struct {
		name   string
		item   func(i int) map[string]any
		key    string
		firstI string
	}{
		{"name before title", func(i int) map[string]any {
			return map[string]any{"title": "t", "name": "n" + strconv.Itoa(i), "pad": strings.Repeat("x", 300)}
		}, "name", `"n3"`},
		{"label last", func(i int) map[string]any {
			return map[string]any{"label": "l" + strconv.Itoa(i), "pad": strings.Repeat("x", 300)}
		}, "label", `"l3"`},
		{"long string clipped on a rune", func(i int) map[string]any {
			return map[string]any{"slug": long, "pad": strings.Repeat("x", 300)}
		}, "slug", strconv.Quote(long[:idClip] + "…")},
		{"object identity is null", func(i int) map[string]any {
			return map[string]any{"id": map[string]int{"n": i}, "pad": strings.Repeat("x", 300)}
		}, "id", `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			arr := make([]map[string]any, 40)
			for i := range arr {
				arr[i] = c.item(i)
			}
			out, ok := chunkJSON(mustJSON(arr))
			var got struct {
				IdentityKey  string            `json:"identity_key"`
				RemainingIDs []json.RawMessage `json:"remaining_ids"`
			}
			if err := json.Unmarshal([]byte(out), &got); !ok || err != nil {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			diff(t, "identity_key", c.key, got.IdentityKey)
			diff(t, "first remaining id", c.firstI, string(got.RemainingIDs[0]))
		})
	}
}

func TestChunkPaths(t *testing.T) {
	out, ok := chunkJSON(nestedJSON(60))
	if !ok {
		t.Fatal("not chunked")
	}
	var got struct {
		Chunks []struct {
			Path    string
			Bytes   int
			IDs     []int
			Value   json.RawMessage
			Preview string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("summary is invalid JSON: %v", err)
	}
	var paths []string
	for _, c := range got.Chunks {
		paths = append(paths, c.Path)
	}
	want := []string{"facets > owner", "facets > tags", "readme", "results > cursor"}
	for i := 0; i < 60; i += groupSize {
		want = append(want, "results > items > ["+strconv.Itoa(i)+"-"+strconv.Itoa(i+groupSize-1)+"]")
	}
	want = append(want, "total")
	diff(t, "paths", want, paths)
	diff(t, "ids of [5-9]", []int{105, 106, 107, 108, 109}, got.Chunks[5].IDs)
	diff(t, "total", "60", string(got.Chunks[len(got.Chunks)-1].Value))
	if p := got.Chunks[2].Preview; !strings.HasPrefix(p, "This repository") || len(p) > previewClip+len("…") {
		t.Errorf("readme preview = %q", p)
	}
}

func TestChunkPathsShapes(t *testing.T) {
	big := strings.Repeat("z", 12000)
	deep := any(map[string]any{"leaf": big, "k2": 1})
	for range 10 {
		deep = map[string]any{"a": deep, "b": 2}
	}
	scalars := make([]int, 5000)
	for i := range scalars {
		scalars[i] = 100000 + i
	}
	cases := []struct {
		name    string
		in      string
		changed bool
		has     []string // substrings the summary must hold
	}{
		{"single chunk", mustJSON(map[string]string{"blob": big}), false, nil},
		{"not JSON", "{" + big, false, nil},
		{"scalar document", mustJSON(big), false, nil},
		{"one-item array is walked", mustJSON(map[string]any{"data": []any{map[string]any{"x": big, "y": 1}}}), true,
			[]string{`{"path":"data > [0] > x","bytes":12002,"preview":`, `{"path":"data > [0] > y","value":1}`}},
		{"depth limit", mustJSON(deep), true,
			[]string{`{"path":"a > a > a > a > a > a > a > a","bytes":`, `"keys":["a","b"]}`}},
		{"chunk limit", mustJSON(map[string]any{"n": scalars}), true,
			[]string{`{"path":"n > [0-4]","bytes":30,"values":[100000,100001,100002,100003,100004]}`, `{"path":"…","omitted_chunks":700}`}},
		{"no identity lists keys", mustJSON(map[string]any{"rows": noIdentity(100), "k": 1}), true,
			[]string{`{"path":"rows > [0-4]","bytes":`, `"keys":["x","y","z"]}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := chunkJSON(c.in)
			if ok != c.changed {
				t.Fatalf("changed = %v, want %v", ok, c.changed)
			}
			if !ok {
				diff(t, "output", c.in, out)
				return
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("summary is invalid JSON:\n%s", out)
			}
			for _, h := range c.has {
				if !strings.Contains(out, h) {
					t.Errorf("summary lacks %s:\n%.2000s", h, out)
				}
			}
		})
	}
}

var (
	lineMarker = regexp.MustCompile(`(?m)^\.\.\. \[(\d+) lines / (\d+\.\dKB) truncated — showing first (\d+) \+ last (\d+) lines\] \.\.\.$`)
	charMarker = regexp.MustCompile(`\n\.\.\. \[truncated middle — (\d+\.\dKB) omitted\] \.\.\.\n`)
)

func TestTruncateLines(t *testing.T) {
	for _, limit := range []int{1000, 2000, 40000} {
		in := logText(limit * 3)
		out, ok := truncateMiddle(in, limit)
		if !ok || len(out) > limit {
			t.Fatalf("limit %d: ok=%v len=%d", limit, ok, len(out))
		}
		m := lineMarker.FindStringSubmatchIndex(out)
		if m == nil {
			t.Fatalf("limit %d: no line marker in\n%s", limit, out)
		}
		head, tail := out[:m[0]], out[m[1]+1:]
		if !strings.HasPrefix(in, head) || !strings.HasSuffix(in, tail) || !strings.HasSuffix(head, "\n") {
			t.Fatalf("limit %d: head or tail is not whole lines of the input", limit)
		}
		atoi := func(i int) int { n, _ := strconv.Atoi(out[m[2*i]:m[2*i+1]]); return n }
		omitted := len(in) - len(head) - len(tail)
		diff(t, "marker numbers", []string{
			strconv.Itoa(countLines(in) - countLines(head) - countLines(tail)), kb(omitted),
			strconv.Itoa(countLines(head)), strconv.Itoa(countLines(tail)),
		}, []string{strconv.Itoa(atoi(1)), out[m[4]:m[5]], strconv.Itoa(atoi(3)), strconv.Itoa(atoi(4))})
		// 60/40 within one line (~75 bytes) of the budget split.
		budget := limit - markerReserve
		if len(head) > budget*6/10 || len(head) < budget*6/10-100 || len(tail) > budget*4/10+1 || len(tail) < budget*4/10-100 {
			t.Errorf("limit %d: head %d tail %d, want about %d/%d", limit, len(head), len(tail), budget*6/10, budget*4/10)
		}
	}
}

func TestTruncateSingleLine(t *testing.T) {
	cases := []struct{ name, in string }{
		{"ascii", strings.Repeat("0123456789", 1000)},
		{"multibyte", strings.Repeat("日本語é", 1000)},
		{"graphemes", strings.Repeat("👩‍👩‍👧‍👦🇯🇵e\u0301", 500)},
		{"one huge line among short ones", "a\n" + strings.Repeat("x", 9000) + "\nb\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := truncateMiddle(c.in, 2000)
			if !ok || len(out) > 2000 || !utf8.ValidString(out) {
				t.Fatalf("ok=%v len=%d valid=%v", ok, len(out), utf8.ValidString(out))
			}
			m := charMarker.FindStringSubmatchIndex(out)
			if m == nil {
				t.Fatalf("no marker in %q", out)
			}
			head, tail := out[:m[0]], out[m[1]:]
			if !strings.HasPrefix(c.in, head) || !strings.HasSuffix(c.in, tail) {
				t.Fatal("head or tail is not from the input")
			}
			if !textcut.IsBoundary(c.in, len(head)) || !textcut.IsBoundary(c.in, len(c.in)-len(tail)) {
				t.Error("cut splits a grapheme")
			}
			diff(t, "omitted", kb(len(c.in)-len(head)-len(tail)), out[m[2]:m[3]])
		})
	}
}

func TestTruncateFits(t *testing.T) {
	in := logText(3000)
	for _, limit := range []int{1, 10, 100, 200, len(in) - 1, len(in), len(in) + 1} {
		out, ok := truncateMiddle(in, limit)
		if len(out) > limit && ok || ok != (len(in) > limit) || !utf8.ValidString(out) {
			t.Errorf("limit %d: len %d ok %v", limit, len(out), ok)
		}
	}
}

func TestCapHead(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		limit  int
		marker bool
	}{
		{"lines", logText(5000), 1000, true},
		{"multibyte", strings.Repeat("日本語é", 1000), 1001, true},
		{"no room for a marker", strings.Repeat("é", 100), 61, false},
		{"fits", "short", 5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := capHead(c.in, c.limit)
			if len(out) > c.limit || !utf8.ValidString(out) {
				t.Fatalf("len %d > %d or invalid UTF-8", len(out), c.limit)
			}
			i := strings.Index(out, "... [output cut at max_output_size — ")
			if (i >= 0) != c.marker {
				t.Fatalf("marker present = %v, want %v:\n%s", i >= 0, c.marker, out)
			}
			head := out
			if i >= 0 {
				head = strings.TrimSuffix(out[:i], "\n")
				if !strings.HasSuffix(out, kb(len(c.in)-len(head))+" omitted] ...") &&
					!strings.HasSuffix(out, kb(len(c.in)-len(head)-1)+" omitted] ...") {
					t.Errorf("omitted size wrong: %q", out[i:])
				}
			}
			if !strings.HasPrefix(c.in, head) {
				t.Error("head is not a prefix of the input")
			}
		})
	}
}

func TestFooterFormat(t *testing.T) {
	diff(t, "footer", "[Output: 1.0KB returned, 10.0KB processed, 90% reduced]", footer(1024, 10240))
	diff(t, "footer", "[Output: 0.0KB returned, 0.2KB processed, 100% reduced]", footer(0, 201))
	diff(t, "footer", "[Output: 9.8KB returned, 10.0KB processed, 2% reduced]", footer(10000, 10240))
	diff(t, "percent rounds down", "[Output: 0.0KB returned, 0.0KB processed, 66% reduced]", footer(1, 3))
}

func TestIntentNote(t *testing.T) {
	terms := append(strings.Fields("t1 t2 t3 t4 t5 t6 t7 t8 t9"), strings.Repeat("é", 20), "t11")
	diff(t, "note", "[Intent filter: kept 3 of 40 paragraphs mentioning at least 30% of: "+
		"t1, t2, t3, t4, t5, t6, t7, t8, t9, "+strings.Repeat("é", 16)+"…, …]",
		intentNote(3, "40 paragraphs", terms))
}
