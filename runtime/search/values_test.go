package search

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanValues(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Kinds
		exts []string
	}{
		{"save it to /root/notes/x.md", KindFile, []string{"md"}},
		{"the audio file at /root/music/a.wav.", KindFile, []string{"wav"}},
		{"report titled r.pdf in /root/pdf", KindFile | KindDir, []string{"pdf"}},
		{"What files are in my /root/music folder?", KindDir, nil},
		{"open ~/code/main.go and ./build.sh", KindFile, []string{"go", "sh"}},
		{"edit docs/README.md", KindFile, []string{"md"}},
		{`copy C:\Users\ada\q3.XLSX`, KindFile, []string{"xlsx"}},
		{"(see '/root/a b/c.txt')", KindFile | KindDir, []string{"txt"}},
		// Not paths.
		{"fetch https://example.com/a.pdf", 0, nil},
		{"run a whois on www.baidu.com.", 0, nil},
		{"mail ada@example.md about it", 0, nil},
		{"on 2022-04-30 and 05/01/2024", 0, nil},
		{"yes and/or no", 0, nil},
		{"open 24/7, 1/2 or 3/4 of it", 0, nil},
		{"docs for vercel/ai and shadcn/ui", 0, nil},
		{"a sub-DPS/buffer and a healer/survivor", 0, nil},
		{"built with Node.js and Next.js, e.g. a site", 0, nil},
		{"it weighs 9.5g, v1.2.3 of baidu.com", 0, nil},
		{"reply to @ada or a@b", 0, nil},
		{"iVBORw0KGgo+AAAAN/SUhEUgAA=", 0, nil},
		{"12/2024 and 2024-13", 0, nil},
		{"", 0, nil},
	} {
		t.Run(tc.text, func(t *testing.T) {
			var exts []string
			got := scanValues(tc.text, func(e string) { exts = append(exts, e) })
			if got != tc.want {
				t.Errorf("kinds = %02b, want %02b", got, tc.want)
			}
			if diff := cmp.Diff(tc.exts, exts); diff != "" {
				t.Errorf("extensions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParamKinds(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		want      Kinds
	}{
		{"path", "string", KindPath},
		{"fileAbsolutePath", "string", KindPath},
		{"filename", "string", KindFile},
		{"outputDir", "", KindDir},
		{"image_paths", "array", KindPath},
		{"isFile", "boolean", 0},
		{"file_type", "string", 0},
		{"path_count", "integer", 0},
		{"path_pattern", "string", 0},
		{"imageUrl", "string", 0},
		{"query", "string", 0},
		{"profile", "string", 0},
	} {
		if got := paramKinds(tc.name, tc.typ); got != tc.want {
			t.Errorf("paramKinds(%q, %q) = %02b, want %02b", tc.name, tc.typ, got, tc.want)
		}
	}
}

func TestNewDocTakes(t *testing.T) {
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"path":    map[string]any{"type": "string", "description": "File to write"},
		"content": map[string]any{"type": "string"},
		"notify":  map[string]any{"type": "string", "format": "email"},
	}})
	d := NewDoc("fs", "write_file", "", "Write a file.", schema)
	if want := KindPath; d.Takes != want {
		t.Errorf("Takes = %02b, want %02b", d.Takes, want)
	}
	if d := NewDoc("fs", "x", "", "", []byte("{not json")); d.Takes != 0 {
		t.Errorf("broken schema: Takes = %02b, want none", d.Takes)
	}
}

func TestImpliedStep(t *testing.T) {
	for _, tc := range []struct {
		query, want string
		kinds       Kinds
	}{
		{"Generate a report of bitcoin and save it in /root/markdown/bitcoin.md", "write file markdown ", KindFile},
		{"Summarize the news to ~/brief.docx", "write file word document ", KindFile},
		{"Analyze the audio file at /root/music/a.wav.", "read file audio ", KindFile},
		{"Read /root/x.xlsx. Plot it and save it in /root/figs/a.png", "read file excel spreadsheet write file image ", KindFile},
		{"What files are in my /root/music folder?", "list directory ", KindDir},
		{"Write the report in /root/pdf", "write file ", KindFile},
		{"open report.qqq and /root/data.qqq", "read file ", KindFile},
		{"fetch https://example.com/a.md and mail ada@example.com", "", 0},
		{"search the web for news", "", 0},
	} {
		got, k := impliedStep(nil, tc.query)
		if string(got) != tc.want || k != tc.kinds {
			t.Errorf("impliedStep(%q) = %q, %02b; want %q, %02b", tc.query, got, k, tc.want, tc.kinds)
		}
	}
}

// impliedDocs are a task's tools: "save" and "summary" match the first
// two, and only the file writer, which no word of the task names, takes a
// path.
func impliedDocs() []Doc {
	schema := func(param string) []byte {
		b, _ := json.Marshal(map[string]any{"properties": map[string]any{param: map[string]any{"type": "string"}}})
		return b
	}
	return []Doc{
		NewDoc("news", "summarize_news", "", "Summarize today's news into a short summary.", schema("topic")),
		NewDoc("notes", "save_note", "", "Save a note to the notebook.", schema("text")),
		NewDoc("slides", "save_presentation", "", "Save the presentation.", schema("presentation_id")),
		NewDoc("fs", "write_file", "", "Write content to a file, replacing it.", schema("path")),
		NewDoc("fs", "read_file", "", "Read the content of a file.", schema("path")),
		NewDoc("web", "fetch", "", "Fetch a web page and save it as markdown.", schema("url")),
	}
}

func TestImpliedListsFileTool(t *testing.T) {
	const task = "Summarize the news and save it to /root/notes/brief.md"
	ranked := func(cfg Config, q string, limit int) []string {
		var out []string
		for _, h := range BuildWith(impliedDocs(), cfg).Search(q, Options{Limit: limit}) {
			out = append(out, h.ID)
		}
		return out
	}
	off := DefaultConfig()
	off.Implied = 0
	if got := ranked(off, task, 10); slices.Index(got, "fs.write_file") >= 0 && slices.Index(got, "fs.write_file") < 2 {
		t.Fatalf("without Implied the file writer ranks %v already: the test proves nothing", got)
	}
	cfg := DefaultConfig()
	cfg.Implied = 2
	got := ranked(cfg, task, 10)
	if len(got) < 2 || got[1] != "fs.write_file" {
		t.Errorf("%q ranks %v, want fs.write_file second", task, got)
	}
	if diff := cmp.Diff(ranked(off, task, 10)[:1], got[:1]); diff != "" {
		t.Errorf("the task's best tool moved (-want +got):\n%s", diff)
	}
	// The same task without the path, and a limit of one, list no
	// implied tool.
	if got := ranked(cfg, "Summarize the news and save it", 10); slices.Contains(got, "fs.write_file") && slices.Index(got, "fs.write_file") < 2 {
		t.Errorf("no path, yet the file writer ranks %v", got)
	}
	if got := ranked(cfg, task, 1); slices.Contains(got, "fs.write_file") {
		t.Errorf("limit 1 ranks %v", got)
	}
	// Reading a file finds the reader, not the writer.
	got = ranked(cfg, "Summarize the news in /root/notes/brief.md", 10)
	if len(got) < 2 || got[1] != "fs.read_file" {
		t.Errorf("reading ranks %v, want fs.read_file second", got)
	}
}

func TestImpliedKeepsLimitAndScores(t *testing.T) {
	cfg := DefaultConfig()
	ix := BuildWith(impliedDocs(), cfg)
	for limit := 1; limit <= 6; limit++ {
		hits := ix.Search("Summarize the news and save it to /root/notes/brief.md", Options{Limit: limit})
		if len(hits) > limit {
			t.Errorf("limit %d: %d hits", limit, len(hits))
		}
		seen := map[string]bool{}
		for i, h := range hits {
			if seen[h.ID] {
				t.Errorf("limit %d: %s listed twice", limit, h.ID)
			}
			seen[h.ID] = true
			if i > 0 && h.Score > hits[i-1].Score {
				t.Errorf("limit %d: score rises at rank %d: %v", limit, i+1, hits)
			}
		}
	}
}

func TestImpliedAllocatesLittle(t *testing.T) {
	ix := Build(impliedDocs())
	const q = "Read the Sales data under /root/excel/Q3.xlsx, plot it and Save it in /root/figs/sale.png"
	ix.Search(q, Options{})
	// The hits slice; the words of the task, capitalised or not, and the
	// implied step's query cost nothing more.
	if n := testing.AllocsPerRun(100, func() { ix.Search(q, Options{}) }); n > 1 {
		t.Errorf("Search allocates %v times a query, want 1", n)
	}
}

// FuzzImplied: whatever values a task names, its ranking keeps to the
// limit, lists no tool twice and its scores never rise.
func FuzzImplied(f *testing.F) {
	for _, q := range []string{
		"Summarize the news and save it to /root/notes/brief.md", "read ~/a.xlsx, write ./b.png.",
		"/", "//", "~/", "a.md", "x /root/é/ü.txt? save", "2024-05-01 May 3 ada@b.co https://x.y",
		"save " + strings.Repeat("/a/b.md ", 200),
	} {
		f.Add(q, 3)
	}
	ix := Build(impliedDocs())
	f.Fuzz(func(t *testing.T, q string, limit int) {
		limit = limit%12 + 1
		if limit <= 0 {
			limit += 12
		}
		scanValues(q, func(string) {})
		hits := ix.Search(q, Options{Limit: limit})
		if len(hits) > limit {
			t.Fatalf("Search(%q, %d): %d hits", q, limit, len(hits))
		}
		seen := map[string]bool{}
		for i, h := range hits {
			if seen[h.ID] || h.ID == "" || i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("Search(%q, %d) = %v", q, limit, hits)
			}
			seen[h.ID] = true
		}
	})
}

// TestTakesSurviveLoad: the frozen index keeps each tool's value kinds,
// and the loaded index ranks a named file's tool as the built one does.
func TestTakesSurviveLoad(t *testing.T) {
	built := Build(impliedDocs())
	data, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range impliedDocs() {
		if got, want := loaded.Doc(i).Takes, built.Doc(i).Takes; got != want {
			t.Errorf("%s: Takes %02b after Load, want %02b", built.Doc(i).ID, got, want)
		}
	}
	const q = "Summarize the news and save it to /root/notes/brief.md"
	if diff := cmp.Diff(built.Search(q, Options{}), loaded.Search(q, Options{})); diff != "" {
		t.Errorf("Search(%q) after Load (-built +loaded):\n%s", q, diff)
	}
}
