package search

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func tokens(cfg Config, s string) []string {
	tk := &tokenizer{cfg: &cfg}
	var out []string
	tk.each(s, func(b []byte) { out = append(out, string(b)) })
	return out
}

func TestTokenize(t *testing.T) {
	plain := Config{SplitDigitUpper: true}
	acr := Config{SplitDigitUpper: true, AcronymPlural: true}
	bigram := Config{CJK: CJKBigram}
	both := Config{CJK: CJKBoth}
	light := Config{Stem: StemLight}
	tests := []struct {
		cfg  Config
		in   string
		want []string
	}{
		{plain, "get_current_time", []string{"get", "current", "time"}},
		{plain, "get-weread-rank", []string{"get", "weread", "rank"}},
		{plain, "tools.list", []string{"tools", "list"}},
		{plain, "getHTTPResponse", []string{"get", "http", "response"}},
		{plain, "v2Api mp3", []string{"v2", "api", "mp3"}},
		{Config{}, "v2Api", []string{"v2api"}},
		{plain, "GUIDs and URLs", []string{"gui", "ds", "ur", "ls"}},
		{acr, "GUIDs and URLs", []string{"guids", "urls"}},
		{acr, "IMDb", []string{"im", "db"}}, // not a plural: still split
		{plain, "The file is in a folder", []string{"file", "folder"}},
		{plain, "Ünïcode ÉCOLE café", []string{"ünïcode", "école", "café"}},
		{plain, "使用必应搜索", []string{"使", "用", "必", "应", "搜", "索"}},
		{bigram, "使用必应搜索", []string{"使用", "用必", "必应", "应搜", "搜索"}},
		{bigram, "获取 36 氪热榜", []string{"获取", "36", "氪热", "热榜"}},
		{bigram, "氪 x", []string{"氪", "x"}},
		{both, "必应", []string{"必", "应", "必应"}},
		{plain, "ゲームのランキング", []string{"ゲ", "ー", "ム", "の", "ラ", "ン", "キ", "ン", "グ"}},
		{light, "searching searched searches parking cities create", []string{"search", "search", "search", "park", "citi", "creat"}},
		{plain, "", nil},
		{plain, "___ -- !!", nil},
		{plain, "\xff\xfeabc", []string{"abc"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tokens(tc.cfg, tc.in)); diff != "" {
			t.Errorf("tokens(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestStemmers(t *testing.T) {
	// Pairs from Porter's published vocabulary and output files.
	porter := map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "digitizer": "digit", "operator": "oper", "feudalism": "feudal",
		"hopefulness": "hope", "formaliti": "formal", "triplicate": "triplic", "electrical": "electr",
		"goodness": "good", "allowance": "allow", "adjustable": "adjust", "replacement": "replac",
		"adoption": "adopt", "effective": "effect", "probate": "probat", "rate": "rate", "cease": "ceas",
		"controll": "control", "roll": "roll", "generalizations": "gener", "oscillators": "oscil",
		"a": "a", "is": "is", "é": "é", "naïve": "naïve",
	}
	for in, want := range porter {
		if got := string(stemPorter([]byte(in))); got != want {
			t.Errorf("stemPorter(%q) = %q, want %q", in, got, want)
		}
	}
	plural := map[string]string{
		"queries": "query", "files": "file", "boxes": "boxe", "status": "status", "class": "class",
		"news": "new", "series": "sery", "aies": "aie", "shoes": "shoe", "gas": "ga", "is": "is",
	}
	for in, want := range plural {
		if got := string(stemPlural([]byte(in))); got != want {
			t.Errorf("stemPlural(%q) = %q, want %q", in, got, want)
		}
	}
	light := map[string]string{
		"generalizations": "generalization", "searching": "search", "created": "creat", "news": "new",
		"searches": "search", "creates": "creat", "controlling": "control", "files": "file",
	}
	for in, want := range light {
		if got := string(stemLight([]byte(in))); got != want {
			t.Errorf("stemLight(%q) = %q, want %q", in, got, want)
		}
	}
}
