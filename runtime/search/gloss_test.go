package search

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGlossFindsChineseTools(t *testing.T) {
	docs := append(corpus(), NewDoc("zh", "all", "", "获取所有菜谱", nil))
	ix := Build(docs)
	// cn.weather_report is "查询北京天气预报" and zh.all "获取所有菜谱": no
	// English word of their own but their names.
	expectSearch(t, ix, "beijing weather forecast report", "cn.weather_report")
	expectSearch(t, ix, "recipes", "zh.all")

	cfg := DefaultConfig()
	cfg.Weights[FieldGloss] = 0
	off := BuildWith(docs, cfg)
	if got := ids(off.Search("recipes", Options{})); slices.Contains(got, "zh.all") {
		t.Errorf("gloss weight 0 still glosses: %v", got)
	}
}

func TestGlossTerms(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"Search the web", nil},
		{"查询北京天气预报", []string{"forecast", "lookup", "query", "search", "weather"}},
		// The longest entry wins: 排行榜 is not also 排行.
		{"获取排行榜", []string{"fetch", "get", "leaderboard", "ranking"}},
	}
	for _, tc := range tests {
		d := Doc{Description: tc.text}
		if diff := cmp.Diff(tc.want, glossTerms(&d)); diff != "" {
			t.Errorf("glossTerms(%q) (-want +got):\n%s", tc.text, diff)
		}
	}
}
