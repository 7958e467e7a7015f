package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzAppendRecord: every line appendRecord writes decodes with
// encoding/json to the record it was given (strings with invalid UTF-8
// as encoding/json itself would decode them: U+FFFD).
func FuzzAppendRecord(f *testing.F) {
	f.Add("jwt alice", "b.t\"\\\n\x01<&>\u2028", 1.25, 7)
	f.Add("", "\xff\xfe", 0.0, 0)
	f.Fuzz(func(t *testing.T, identity, detail string, ms float64, n int) {
		if ms != ms || ms > 1e300 || ms < -1e300 {
			return // NaN and huge values never come from a duration
		}
		r := Record{Time: time.Unix(1700000000, 123456789).UTC(), Replica: "r", Event: EventCall, Identity: identity,
			Tool: "b.t", Args: json.RawMessage(`{"a":[1,"x"]}`), Outcome: OutcomeOK, DurationMS: ms, ResultBytes: n, Detail: detail}
		line := appendRecord(nil, &r)
		if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
			t.Fatalf("not one line: %q", line)
		}
		var got Record
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := r
		want.Identity, want.Detail = viaJSON(t, identity), viaJSON(t, detail)
		if !got.Time.Equal(want.Time) || got.Identity != want.Identity || got.Detail != want.Detail || got.DurationMS != want.DurationMS ||
			got.ResultBytes != want.ResultBytes || string(got.Args) != string(want.Args) || got.Tool != want.Tool || got.Outcome != want.Outcome {
			t.Fatalf("line %q decodes to %+v, want %+v", line, got, want)
		}
	})
}

// viaJSON is s after encoding/json writes and reads it back.
func viaJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
