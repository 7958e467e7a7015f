package backend

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

var resultSeeds = []string{
	`{"content":[{"type":"text","text":"Echo: hi"}]}`,
	`{"content":[],"isError":true,"structuredContent":{"n":1},"_meta":{"a":[1, 2]}}`,
	`{ "content" : [ {"type":"image","data":"AA==","mimeType":"image/png"} , {"type":"text","text":"\u00e9"} ] , "isError" : false }`,
	`{"content":null,"isError":null,"structuredContent":null,"_meta":null}`,
	`{"content":[1],"content":[2,3]}`,
	`{"Content":[{"type":"text","text":"x"}]}`,
	`{"isError":"yes"}`,
	`{"content":{}}`,
	`{"c\u006fntent":[]}`,
	`{"toolResult":{"x":1},"other":[1,2]}`,
	`null`,
	`[1]`,
	`{"content":[`,
}

// TestScanResultAsTheDecoder: what scanResult reads, it reads as
// json.Unmarshal does; what it leaves to the decoder includes everything
// the decoder refuses.
func TestScanResultAsTheDecoder(t *testing.T) {
	scanned := 0
	for _, raw := range resultSeeds {
		if checkScanResult(t, raw) {
			scanned++
		}
	}
	if scanned < 5 {
		t.Errorf("scanResult read %d of the %d seeds, want the plain ones (at least 5)", scanned, len(resultSeeds))
	}
}

func FuzzScanResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkScanResult(t, raw) })
}

func checkScanResult(t *testing.T, raw string) (scanned bool) {
	t.Helper()
	var want toolcall.Result
	werr := json.Unmarshal([]byte(raw), &want)
	var got toolcall.Result
	if !scanResult([]byte(raw), &got) {
		return false
	}
	if werr != nil {
		t.Fatalf("scanResult read %q, which encoding/json refuses: %v", raw, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scanResult(%q) = %+v, encoding/json %+v", raw, got, want)
	}
	return true
}
