package pipeline

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

var update = flag.Bool("update", false, "rewrite testdata/golden files")

var (
	goldenMu   sync.Mutex
	goldenUsed = map[string]bool{}
)

// TestMain fails the run when a golden file exists that no test produced,
// so a renamed or deleted case cannot leave a stale golden behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !*update {
		files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.golden"))
		for _, f := range files {
			if !goldenUsed[filepath.Base(f)] {
				fmt.Fprintf(os.Stderr, "unused golden file %s\n", f)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// expectGolden compares got with testdata/golden/<name>.golden, or writes it
// under -update.
func expectGolden(t *testing.T, name, got string) {
	t.Helper()
	file := name + ".golden"
	goldenMu.Lock()
	goldenUsed[file] = true
	goldenMu.Unlock()
	path := filepath.Join("testdata", "golden", file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	diff(t, path, string(want), got)
}

func renderText(out string, st Stats) string {
	return fmt.Sprintf("# stages: %s\n# processed: %d returned: %d\n%s",
		strings.Join(st.Stages, ","), st.Processed, st.Returned, out)
}

func TestGoldenText(t *testing.T) {
	def := DefaultOptions()
	with := func(f func(*Options)) Options {
		o := DefaultOptions()
		f(&o)
		return o
	}
	multibyte := strings.Repeat("日本語のテキストと绘文字👩‍👩‍👧‍👦🇯🇵é ", 200)
	cases := []struct {
		name string
		in   string
		o    Options
	}{
		{"intent_paragraphs", prose(8000), with(func(o *Options) { o.Intent = "why did the database time out?" })},
		{"intent_lines", logText(7000), with(func(o *Options) { o.Intent = "ERROR timeout" })},
		{"intent_json", itemsJSON(60), with(func(o *Options) { o.Intent = "cache replica" })},
		{"intent_json_nested", nestedJSON(60), with(func(o *Options) { o.Intent = "render window" })},
		{"json_uniform", itemsJSON(60), def},
		{"json_uniform_no_identity", mustJSON(noIdentity(80)), def},
		{"json_keypath", nestedJSON(60), def},
		{"json_scalar_groups", mustJSON(map[string]any{"words": repeatWords(1500), "n": 1}), def},
		{"truncate_lines", logText(6000), with(func(o *Options) { o.TruncateAt = 2000 })},
		{"truncate_single_line", strings.Repeat("0123456789abcdef", 400), with(func(o *Options) { o.TruncateAt = 2000 })},
		{"truncate_graphemes", multibyte, with(func(o *Options) { o.TruncateAt = 1000 })},
		{"cap_head_only", logText(5000), with(func(o *Options) { o.SmartTruncation = false; o.MaxOutputSize = 1500 })},
		{"cap_no_footer", logText(5000), with(func(o *Options) {
			o.SmartTruncation, o.SizeFooter, o.MaxOutputSize = false, false, 1500
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, st := Text(c.in, c.o)
			expectGolden(t, "text_"+c.name, renderText(out, st))
		})
	}
}

func noIdentity(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"x": i, "y": strings.Repeat("v", 100+i%7), "z": []int{i, i * 2}}
	}
	return out
}

func repeatWords(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = words[i%len(words)] + fmt.Sprint(i)
	}
	return out
}

func TestGoldenResult(t *testing.T) {
	image := json.RawMessage(`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}`)
	resource := json.RawMessage(`{"type":"resource","resource":{"uri":"file:///big.txt","text":` +
		mustJSON(strings.Repeat("resource text ", 30)) + `}}`)
	text := toolcall.Text(logText(6000)).Content[0]
	r := &toolcall.Result{
		Content:           []json.RawMessage{text, image, resource},
		StructuredContent: json.RawMessage(`{"rows":` + itemsJSON(3) + `}`),
		Meta:              json.RawMessage(`{"trace":"abc"}`),
	}
	o := DefaultOptions()
	o.TruncateAt = 1500
	got, st := Result(r, o)
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	expectGolden(t, "result_mixed", renderText(string(b), st))
}
