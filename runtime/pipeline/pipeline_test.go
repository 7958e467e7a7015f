package pipeline

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// TestToggles checks that every option changes behaviour: for each, one
// input where the stage fires with the setting and does not without it.
func TestToggles(t *testing.T) {
	prose8k, items60, log60k, log300k := prose(8000), itemsJSON(60), logText(60000), logText(300000)
	cases := []struct {
		name  string
		in    string
		stage string
		on    func(*Options)
		off   func(*Options)
	}{
		{"IntentFilter", prose8k, StageIntent,
			func(o *Options) { o.Intent = "database" },
			func(o *Options) { o.Intent, o.IntentFilter = "database", false }},
		{"IntentThreshold", prose8k, StageIntent,
			func(o *Options) { o.Intent = "database" },
			func(o *Options) { o.Intent, o.IntentThreshold = "database", len(prose8k) }},
		{"AutoChunkJSON", items60, StageJSON,
			func(o *Options) {},
			func(o *Options) { o.AutoChunkJSON = false }},
		{"ChunkThreshold", items60, StageJSON,
			func(o *Options) {},
			func(o *Options) { o.ChunkThreshold = len(items60) }},
		{"SmartTruncation", log60k, StageTruncate,
			func(o *Options) {},
			func(o *Options) { o.SmartTruncation = false }},
		{"TruncateAt", log60k, StageTruncate,
			func(o *Options) {},
			func(o *Options) { o.TruncateAt = len(log60k) }},
		{"SizeFooter", log60k, StageFooter,
			func(o *Options) {},
			func(o *Options) { o.SizeFooter = false }},
		{"MaxOutputSize", log300k, StageCap,
			func(o *Options) { o.SmartTruncation = false },
			func(o *Options) { o.SmartTruncation, o.MaxOutputSize = false, len(log300k) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			on, off := DefaultOptions(), DefaultOptions()
			c.on(&on)
			c.off(&off)
			outOn, stOn := Text(c.in, on)
			outOff, stOff := Text(c.in, off)
			if !contains(stOn.Stages, c.stage) || contains(stOff.Stages, c.stage) {
				t.Errorf("stage %s: on %v, off %v", c.stage, stOn.Stages, stOff.Stages)
			}
			if outOn == outOff {
				t.Error("output is the same either way")
			}
		})
	}
}

func TestSmartTruncationOffIsHeadOnly(t *testing.T) {
	in := logText(300000)
	o := DefaultOptions()
	o.SmartTruncation = false
	out, st := Text(in, o)
	body, _ := splitTrailer(out)
	i := strings.LastIndex(body, "\n... [output cut at max_output_size")
	if i < 0 || !strings.HasPrefix(in, body[:i+1]) || len(out) > DefaultMaxOutputSize {
		t.Fatalf("want a head-only cut under %d bytes, got %d bytes, stages %v", DefaultMaxOutputSize, len(out), st.Stages)
	}
}

// TestFooterThreshold walks the input size across the point where the cap
// saves more than FooterThreshold bytes.
func TestFooterThreshold(t *testing.T) {
	o := DefaultOptions()
	o.SmartTruncation, o.MaxOutputSize = false, 1000
	base := logText(2000)
	seen := map[bool]bool{}
	for n := 900; n < 1400; n++ {
		in := base[:n]
		out, st := Text(in, o)
		if len(out) > o.MaxOutputSize || len(out) > n {
			t.Fatalf("n=%d: output %d bytes", n, len(out))
		}
		body, trailer := splitTrailer(out)
		has := len(trailer) == 1
		if want := n-len(body) > FooterThreshold; has != want {
			t.Fatalf("n=%d: footer %v, want %v (body %d)", n, has, want, len(body))
		}
		if has {
			diff(t, "footer", footer(len(body), n), trailer[0])
			diff(t, "stages", []string{StageCap, StageFooter}, st.Stages)
		}
		seen[has] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("the range did not cross the threshold: %v", seen)
	}
}

func TestZeroSizesMeanDefaults(t *testing.T) {
	in := logText(250000)
	out, st := Text(in, Options{})
	if len(out) > DefaultMaxOutputSize || !contains(st.Stages, StageCap) {
		t.Errorf("zero Options: %d bytes, stages %v", len(out), st.Stages)
	}
	if len(st.Stages) != 1 {
		t.Errorf("zero Options ran %v; only the cap is unconditional", st.Stages)
	}
}

// TestInvariants runs many inputs through many option sets and checks what
// must always hold; FuzzText checks the same on random inputs.
func TestInvariants(t *testing.T) {
	inputs := map[string]string{
		"empty": "", "short": "hello", "log": logText(70000), "prose": prose(30000),
		"items": itemsJSON(400), "nested": nestedJSON(300), "crlf": strings.ReplaceAll(logText(50000), "\n", "\r\n"),
		"graphemes": strings.Repeat("👩‍👩‍👧‍👦🇯🇵e\u0301日本\n", 3000), "blank lines only": strings.Repeat("\n", 50000),
	}
	opts := []Options{DefaultOptions(), {}, {MaxOutputSize: 300, SizeFooter: true, IntentFilter: true, Intent: "timeout"}}
	for _, small := range []int{1, 64, 777, 5000} {
		o := DefaultOptions()
		o.Intent, o.MaxOutputSize, o.TruncateAt, o.IntentThreshold, o.ChunkThreshold = "cache error", small, small/2, small, small
		opts = append(opts, o)
	}
	for name, in := range inputs {
		for i, o := range opts {
			out, st := Text(in, o)
			limit := o.withDefaults().MaxOutputSize
			switch {
			case len(out) > limit:
				t.Errorf("%s/%d: %d bytes > MaxOutputSize %d", name, i, len(out), limit)
			case len(out) > len(in):
				t.Errorf("%s/%d: output longer than input", name, i)
			case !utf8.ValidString(out):
				t.Errorf("%s/%d: invalid UTF-8", name, i)
			case st.Processed != len(in) || st.Returned != len(out):
				t.Errorf("%s/%d: stats %+v for %d -> %d", name, i, st, len(in), len(out))
			case len(st.Stages) == 0 && out != in:
				t.Errorf("%s/%d: changed without a stage", name, i)
			}
		}
	}
}

func TestResult(t *testing.T) {
	image := json.RawMessage(`{"type":"image", "data":"AAAA","mimeType":"image/png"}`)
	audio := json.RawMessage(`{"type":"audio","data":"BBBB","mimeType":"audio/wav"}`)
	res := json.RawMessage(`{"type":"resource","resource":{"uri":"file:///x","text":` + mustJSON(logText(60000)) + `}}`)
	odd := json.RawMessage(`{"type":"text","text":42}`)
	annotated := json.RawMessage(`{"type":"text","text":` + mustJSON(logText(60000)) + `,"annotations":{"priority":1}}`)
	structured := json.RawMessage(`{"rows":` + itemsJSON(100) + `}`)
	r := &toolcall.Result{
		Content:           []json.RawMessage{image, annotated, audio, res, odd},
		StructuredContent: structured,
		IsError:           true,
		Meta:              json.RawMessage(`{"k":"v"}`),
	}
	before, _ := json.Marshal(r)
	got, st := Result(r, DefaultOptions())
	after, _ := json.Marshal(r)
	if !bytes.Equal(before, after) {
		t.Fatal("Result modified its input")
	}
	if len(got.Content) != 5 {
		t.Fatalf("got %d blocks", len(got.Content))
	}
	for i, want := range []json.RawMessage{image, nil, audio, res, odd} {
		if want != nil && !bytes.Equal(want, got.Content[i]) {
			t.Errorf("block %d changed:\n%s", i, got.Content[i])
		}
	}
	if !bytes.Equal(got.StructuredContent, structured) || !got.IsError || string(got.Meta) != `{"k":"v"}` {
		t.Error("structuredContent, isError or _meta changed")
	}
	var text struct {
		Type        string
		Text        string
		Annotations map[string]int
	}
	if err := json.Unmarshal(got.Content[1], &text); err != nil {
		t.Fatal(err)
	}
	want, wantSt := Text(logText(60000), DefaultOptions())
	diff(t, "text", want, text.Text)
	diff(t, "annotations", map[string]int{"priority": 1}, text.Annotations)
	diff(t, "stats", wantSt, st)
	if strings.Contains(string(got.Content[1]), `\u003c`) {
		t.Error("text was HTML-escaped")
	}
}

func TestResultSharesBudget(t *testing.T) {
	block := logText(1000)[:1000]
	r := &toolcall.Result{Content: []json.RawMessage{
		toolcall.Text(block).Content[0],
		json.RawMessage(`{"type":"image","data":"AAAA","mimeType":"image/png"}`),
		toolcall.Text(block).Content[0],
		toolcall.Text(block).Content[0],
	}}
	o := DefaultOptions()
	o.MaxOutputSize = 1500
	got, st := Result(r, o)
	if len(got.Content) != 3 {
		t.Fatalf("want the third text block dropped, got %d blocks", len(got.Content))
	}
	diff(t, "first block", string(r.Content[0]), string(got.Content[0]))
	diff(t, "image", string(r.Content[1]), string(got.Content[1]))
	total := len(got.TextContent()) - 1 // TextContent joins with a newline
	if total > o.MaxOutputSize || st.Returned != total || st.Processed != 3000 {
		t.Errorf("text %d bytes, stats %+v", total, st)
	}
	// The second block is cut to what the first left, head and tail; the
	// third finds nothing left.
	if second, _ := textBlock(got.Content[2]); !lineMarker.MatchString(second) {
		t.Errorf("second block was not smart-truncated: %s", got.Content[2])
	}
	diff(t, "stages", []string{StageTruncate, StageCap, StageFooter}, st.Stages)
}

// TestSmallMaxOutputKeepsTail: a MaxOutputSize under TruncateAt still gets
// head and tail, not a head-only cut.
func TestSmallMaxOutputKeepsTail(t *testing.T) {
	in := logText(60000)
	o := DefaultOptions()
	o.MaxOutputSize = 5000
	out, st := Text(in, o)
	body, trailer := splitTrailer(out)
	lastLine := strings.TrimSuffix(in[strings.LastIndex(in[:len(in)-1], "\n")+1:], "\n")
	if len(out) > o.MaxOutputSize || !lineMarker.MatchString(body) || !strings.HasSuffix(body, lastLine) || len(trailer) != 1 {
		t.Errorf("got %d bytes, trailer %q:\n%s", len(out), trailer, out)
	}
	diff(t, "stages", []string{StageTruncate, StageFooter}, st.Stages)
}

func TestStatsAddKeepsPipelineOrder(t *testing.T) {
	s := Stats{Processed: 10, Returned: 5, Stages: []string{StageCap, StageFooter}}
	s.add(Stats{Processed: 7, Returned: 7})
	s.add(Stats{Processed: 9, Returned: 2, Stages: []string{StageIntent, StageFooter}})
	diff(t, "stats", Stats{Processed: 26, Returned: 14, Stages: []string{StageIntent, StageCap, StageFooter}}, s)
}

func TestResultUnchanged(t *testing.T) {
	if got, _ := Result(nil, DefaultOptions()); got != nil {
		t.Error("nil result")
	}
	r := toolcall.Text("small")
	got, st := Result(r, DefaultOptions())
	if &got.Content[0][0] != &r.Content[0][0] || st.Saved() != 0 {
		t.Error("an unchanged block was re-encoded")
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 100 {
				st := Stats{Processed: 100, Returned: 40}
				if g%2 == 0 {
					st.Stages = []string{StageJSON, StageFooter}
				}
				c.Add(st)
			}
		})
	}
	wg.Wait()
	diff(t, "snapshot", Snapshot{
		Calls: 800, BytesProcessed: 80000, BytesReturned: 32000, BytesSaved: 48000,
		Stages: map[string]int64{StageIntent: 0, StageJSON: 400, StageTruncate: 0, StageCap: 0, StageFooter: 400},
	}, c.Snapshot())
	b, _ := json.Marshal(c.Snapshot())
	for _, k := range []string{`"calls":800`, `"bytes_processed":80000`, `"bytes_returned":32000`, `"bytes_saved":48000`, `"auto_chunk_json":400`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("snapshot JSON %s lacks %s", b, k)
		}
	}
}
