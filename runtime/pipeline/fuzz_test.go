package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzText checks, for any input and options, what Text promises: no
// panic; never longer than the input nor than MaxOutputSize, notes and
// footer included (the footer allowance is zero); valid UTF-8 in gives
// valid UTF-8 out; stats that match; and no change without a stage.
// Sizes come in as uint16 so the fuzzer mostly explores small limits,
// where the edge cases are; zero means the default.
func FuzzText(f *testing.F) {
	f.Add([]byte(logText(1200)), "error timeout", uint16(900), uint16(700), uint16(500), uint8(0xff))
	f.Add([]byte(itemsJSON(12)), "cache", uint16(0), uint16(600), uint16(400), uint8(0xff))
	f.Add([]byte(nestedJSON(8)), "", uint16(1000), uint16(800), uint16(300), uint8(0x0f))
	f.Add([]byte(strings.Repeat("👩‍👩‍👧‍👦🇯🇵e\u0301", 80)), "", uint16(333), uint16(201), uint16(0), uint8(0xff))
	f.Add([]byte("a\r\nb\r\n\r\nc"), "b", uint16(3), uint16(2), uint16(1), uint8(0xff))
	f.Add([]byte("\xff\xfe{\"id\":\x80}"), "id", uint16(5), uint16(4), uint16(1), uint8(0xff))
	f.Fuzz(func(t *testing.T, data []byte, intent string, maxOut, truncAt, chunkAt uint16, flags uint8) {
		o := Options{
			Intent:          intent,
			MaxOutputSize:   int(maxOut),
			IntentFilter:    flags&1 != 0,
			AutoChunkJSON:   flags&2 != 0,
			SmartTruncation: flags&4 != 0,
			SizeFooter:      flags&8 != 0,
			IntentThreshold: int(chunkAt) / 2,
			ChunkThreshold:  int(chunkAt),
			TruncateAt:      int(truncAt),
		}
		in := string(data)
		out, st := Text(in, o)
		if limit := o.withDefaults().MaxOutputSize; len(out) > limit {
			t.Fatalf("%d bytes > MaxOutputSize %d", len(out), limit)
		}
		if len(out) > len(in) {
			t.Fatalf("output %d bytes > input %d", len(out), len(in))
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 in, invalid out: %q", out)
		}
		if st.Processed != len(in) || st.Returned != len(out) {
			t.Fatalf("stats %+v for %d -> %d bytes", st, len(in), len(out))
		}
		if len(st.Stages) == 0 && out != in {
			t.Fatal("output changed with no stage reported")
		}
	})
}

// FuzzChunkJSON checks the JSON stages: a summary or an intent-filtered
// document is valid JSON and smaller than its input, and anything not
// changed comes back byte for byte.
func FuzzChunkJSON(f *testing.F) {
	f.Add([]byte(itemsJSON(8)), "cache")
	f.Add([]byte(nestedJSON(6)), "render")
	f.Add([]byte(`[{"a":1},{"a":2},{"a":3},{"a":4,"b":5}]`), "a")
	f.Add([]byte(`{"x":[1,2,[3,[4,{"id":"\u00e9\"\\"}]]],"y":"`+strings.Repeat("é", 150)+`"}`), "y")
	f.Add([]byte(`[[],{},"",0,null,true,-1.5e3]`), "true")
	f.Fuzz(func(t *testing.T, data []byte, intent string) {
		in := string(data)
		if out, ok := chunkJSON(in); ok {
			if !json.Valid([]byte(out)) || len(out) >= len(in) {
				t.Fatalf("bad summary (%d -> %d bytes):\n%s", len(in), len(out), out)
			}
			if utf8.ValidString(in) && !utf8.ValidString(out) {
				t.Fatal("invalid UTF-8 in summary")
			}
		} else if out != in {
			t.Fatal("unchanged input not returned as is")
		}
		doc, isJSON := parseContainer(in)
		if out, _, ok := filterIntent(in, doc, isJSON, intent); ok && isJSON && !json.Valid([]byte(out)) {
			t.Fatalf("intent filter broke JSON:\n%s", out)
		}
	})
}

// FuzzTruncate checks smart truncation and the hard cap: within the limit,
// head a prefix and tail a suffix of the input, cuts never inside a rune.
func FuzzTruncate(f *testing.F) {
	f.Add([]byte(logText(600)), uint16(300))
	f.Add([]byte(strings.Repeat("日本語é", 60)), uint16(200))
	f.Add([]byte("x\n"+strings.Repeat("y", 300)+"\nz"), uint16(100))
	f.Add([]byte("\r\n\r\n\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		in, n := string(data), int(limit)
		out, ok := truncateMiddle(in, n)
		switch {
		case ok != (len(in) > n), ok && len(out) > n, !ok && out != in:
			t.Fatalf("limit %d: ok=%v, %d -> %d bytes", n, ok, len(in), len(out))
		case ok && !splitsAtMarker(in, out):
			t.Fatalf("output is not head + marker + tail of the input:\n%q", out)
		}
		capped := capHead(in, n)
		head, _, _ := strings.Cut(capped, "... [output cut at max_output_size")
		if len(capped) > max(n, 0) && len(in) > n || !strings.HasPrefix(in, strings.TrimSuffix(head, "\n")) {
			t.Fatalf("capHead(%d) = %q", n, capped)
		}
		if utf8.ValidString(in) && (!utf8.ValidString(out) || !utf8.ValidString(capped)) {
			t.Fatal("valid UTF-8 in, invalid out")
		}
	})
}

// splitsAtMarker reports whether out is a prefix of in, a "... [" marker
// ending in "] ..." and a suffix of in; or, when the limit left no room for
// a marker, a plain prefix.
func splitsAtMarker(in, out string) bool {
	if strings.HasPrefix(in, out) {
		return true
	}
	for i := 0; ; i++ {
		j := strings.Index(out[i:], "... [")
		if j < 0 {
			return false
		}
		i += j
		k := strings.Index(out[i:], "] ...\n")
		if k < 0 {
			return false
		}
		head, tail := strings.TrimSuffix(out[:i], "\n"), out[i+k+len("] ...\n"):]
		if strings.HasPrefix(in, head) && strings.HasSuffix(in, tail) && len(head)+len(tail) <= len(in) {
			return true
		}
	}
}

// FuzzTextBlock: the scan finds the same text a full decode does.
func FuzzTextBlock(f *testing.F) {
	for _, s := range []string{`{"type":"text","text":"hi"}`, `{"text":"a\"b","type":"text"}`, `{"type":"te\u0078t","text":"x"}`,
		`{"typ\u0065":"text","text":"x"}`, `{"type":"text","text":1}`, `{"type":"image","data":"x"}`, `{"type":"text"}`,
		`{"type":"text","text":"a","text":"b"}`, `{"TYPE":"text","text":"x"}`, `[]`, `{"type":"text","text":null}`, ` {"type":"text","text":"x"}`, "{\"type\":\"text\",\"text\":\"\x83\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gotText, gotOK := textBlock(json.RawMessage(s))
		wantText, wantOK := decodedText(json.RawMessage(s))
		if gotText != wantText || gotOK != wantOK {
			t.Fatalf("textBlock(%q) = %q, %v; a full decode finds %q, %v", s, gotText, gotOK, wantText, wantOK)
		}
	})
}
