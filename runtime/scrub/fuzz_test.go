package scrub

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// fuzzPlants are secrets that identify themselves without context, each
// with the text that carries it; FuzzScrub drops one into arbitrary input.
var fuzzPlants = []struct{ text, secret string }{
	{fakeGH, fakeGH},
	{fakeOpenAI, fakeOpenAI},
	{fakeAnt, fakeAnt},
	{fakeJWT, fakeJWT},
	{"AKIAQ3EGRIUHD7A6WQ2M", "AKIAQ3EGRIUHD7A6WQ2M"},
	{"AIzaSyD4-9b7Qk2LmN3oP5qR6sT7uV8wX9yZ0a1", "AIzaSyD4-9b7Qk2LmN3oP5qR6sT7uV8wX9yZ0a1"},
	{"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
	{"sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"},
	{"https://u:Zx9-Kp2!Qm7vW@db.example/x", "Zx9-Kp2!Qm7vW"},
	{"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
	{"known:Fz8#known-value-7", "Fz8#known-value-7"},
}

func FuzzScrub(f *testing.F) {
	for _, name := range []string{"testdata/planted.txt", "testdata/lookalikes.txt"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			f.Add(line, uint8(len(line)))
		}
	}
	f.Add(`{"a":"b\u00e9\n","password":"x\"y","n":[1,2.5e3,true,null]}`, uint8(3))
	f.Add(`{"type":"image","data":"AAAA","resource":{"blob":"x"}}`, uint8(7))
	sc := New(Options{Values: []Value{{Name: "KNOWN", Value: "Fz8#known-value-7"}}})
	f.Fuzz(func(t *testing.T, data string, pick uint8) {
		sc.String(data)
		if json.Valid([]byte(data)) {
			if got := sc.JSON(json.RawMessage(data)); !json.Valid(got) {
				t.Fatalf("JSON(%q) = %q: invalid", data, got)
			}
			r := sc.Result(&toolcall.Result{Content: []json.RawMessage{json.RawMessage(data)}})
			if !json.Valid(r.Content[0]) {
				t.Fatalf("Result content %q: invalid", r.Content[0])
			}
		}

		plant := fuzzPlants[int(pick)%len(fuzzPlants)]
		if strings.Contains(data, plant.secret) {
			return // the input carries its own copy, which its context may hide
		}
		k := len(data) / 2
		in := data[:k] + " " + plant.text + " " + data[k:]
		if got := sc.String(in); strings.Contains(got, plant.secret) {
			t.Fatalf("String leaked %q:\nin:  %q\nout: %q", plant.secret, in, got)
		}
		var buf bytes.Buffer
		lw := sc.Writer(&buf)
		split := int(pick) % (len(in) + 1)
		lw.Write([]byte(in[:split]))
		lw.Write([]byte(in[split:]))
		lw.Flush()
		if strings.Contains(buf.String(), plant.secret) {
			t.Fatalf("Writer leaked %q:\nin:  %q\nout: %q", plant.secret, in, buf.String())
		}
	})
}
