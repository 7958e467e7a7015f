package pipeline

import (
	"strconv"
	"testing"
)

// BenchmarkText runs the default pipeline on logs and JSON arrays of 10 KB,
// 100 KB and 1 MB, with and without an intent.
func BenchmarkText(b *testing.B) {
	sizes := []int{10 << 10, 100 << 10, 1 << 20}
	kinds := []struct {
		name   string
		gen    func(n int) string
		intent string
	}{
		{"log", logText, ""},
		{"log+intent", logText, "error timeout"},
		{"json", func(n int) string { return itemsJSON(n / 200) }, ""},
		{"json+intent", func(n int) string { return itemsJSON(n / 200) }, "cache replica"},
	}
	for _, k := range kinds {
		for _, n := range sizes {
			in := k.gen(n)
			o := DefaultOptions()
			o.Intent = k.intent
			b.Run(k.name+"/"+strconv.Itoa(n>>10)+"KB", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					Text(in, o)
				}
			})
		}
	}
}

// BenchmarkTruncate isolates the truncation stage and the hard cap, which
// every large output reaches.
func BenchmarkTruncate(b *testing.B) {
	in := logText(1 << 20)
	b.Run("middle/1MB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			truncateMiddle(in, DefaultTruncateAt)
		}
	})
	b.Run("cap/1MB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			capHead(in, DefaultMaxOutputSize)
		}
	})
}
