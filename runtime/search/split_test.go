package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitTask(t *testing.T) {
	for _, tc := range []struct {
		task string
		want []string // nil: one step, searched as the task alone
	}{
		// Several steps.
		{"Find the repository, then open an issue with the failing test",
			[]string{"Find the repository", "open an issue with the failing test"}},
		{"Find the repository and then open an issue with the failing test",
			[]string{"Find the repository", "open an issue with the failing test"}},
		{"Find the repository and open an issue with the failing test",
			[]string{"Find the repository", "open an issue with the failing test"}},
		{"1. Download the quarterly report\n2. Convert it to PDF\n3) Email it to the finance team",
			[]string{"Download the quarterly report", "Convert it to PDF", "Email it to the finance team"}},
		{"- search flights to Paris\n* book a hotel near the Louvre",
			[]string{"search flights to Paris", "book a hotel near the Louvre"}},
		{"First, fetch today's economic news. Second, summarize the top stories.",
			[]string{"fetch today's economic news", "summarize the top stories"}},
		{"Get the weather in Paris; book a table for two",
			[]string{"Get the weather in Paris", "book a table for two"}},
		{"Convert the report to PDF. After that, email it to the team.",
			[]string{"Convert the report to PDF", "email it to the team"}},
		{"Read the sales data under /root/excel/sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png",
			[]string{"Read the sales data under /root/excel/sales.xlsx", "plot it as a bar chart by month", "save it in /root/figs/sale.png"}},
		{"Can you find the cheapest flight to Tokyo? Also, please book a hotel near Shinjuku.",
			[]string{"Can you find the cheapest flight to Tokyo", "Also, please book a hotel near Shinjuku"}},
		{"Save it to /root/notes.md. Finally send the file to Bob",
			[]string{"Save it to /root/notes.md", "send the file to Bob"}},
		{"1. Find the repo\n2. Clone the repo\n3. Run the tests\n4. Fix the bug\n5. Open a pull request\n6. Email the team",
			[]string{"Find the repo", "Clone the repo", "Run the tests", "Fix the bug"}},
		{"Plan my trip to Paris:\n- flights from Berlin\n- a hotel near the Louvre",
			[]string{"Plan my trip to Paris", "flights from Berlin", "a hotel near the Louvre"}},
		// Context sentences are not steps.
		{"I'm a football fan. Can you show me Messi's clubs? Then list his transfers.",
			[]string{"Can you show me Messi's clubs", "list his transfers"}},

		// One step.
		{"search the web for news", nil},
		{"Tell me the price of nvidia's stock right now.", nil},
		{"I'm a football enthusiast and I want to know more about Lionel Messi's career. Can you provide me with information about Messi's clubs, managers and teammates? I'm also curious about any notable transfers he has made.", nil},
		{"Help me find Mr. Lu's resume at the Institute of Software. Thanks!", nil},
		{"Compare the U.S. GDP with China's GDP over the last decade", nil},
		{"Make a STEINS;GATE introduction PPT", nil},
		{"Find a restaurant and hotel near the station", nil},
		{"If the build fails then open an issue", nil},
		// A piece too thin to search alone joins its neighbour.
		{"Read and summarize the paper on web agents", nil},
		{"Find the cheapest flight to Tokyo and save it", nil},
		{"", nil},
		{"  \n ; . then and ", nil},
	} {
		t.Run(tc.task, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SplitTask(tc.task)); diff != "" {
				t.Errorf("SplitTask(%q) (-want +got):\n%s", tc.task, diff)
			}
		})
	}
}

func FuzzSplitTask(f *testing.F) {
	f.Add("Find the repository, then open an issue with the failing test")
	f.Add("1. a\n2) b; and then, finally: c. D.")
	f.Fuzz(func(t *testing.T, task string) {
		steps := SplitTask(task)
		if steps != nil && len(steps) < 2 {
			t.Fatalf("SplitTask(%q) = %q: one step must be nil", task, steps)
		}
		for _, s := range steps {
			if s == "" {
				t.Fatalf("SplitTask(%q) has an empty step: %q", task, steps)
			}
		}
	})
}

func TestSearchTask(t *testing.T) {
	ix := Build(corpus())

	t.Run("one step is Search", func(t *testing.T) {
		for _, task := range []string{"get the weather forecast for Paris", "weather", "websrch", "I'm in Paris. What's the weather like?"} {
			if diff := cmp.Diff(ix.Search(task, Options{Limit: 4}), SearchTask(ix.Search, task, nil, Options{Limit: 4})); diff != "" {
				t.Errorf("%q (-Search +SearchTask):\n%s", task, diff)
			}
		}
	})

	t.Run("the agent's steps are SearchSteps'", func(t *testing.T) {
		task := "check the weather, then save it"
		steps := []string{"get the forecast", "write the result to a file"}
		want := SearchSteps(ix.Search, task, steps, DefaultMerge, Options{Limit: 4})
		if diff := cmp.Diff(want, SearchTask(ix.Search, task, steps, Options{Limit: 4})); diff != "" {
			t.Errorf("(-SearchSteps +SearchTask):\n%s", diff)
		}
	})

	t.Run("split steps each find their tool", func(t *testing.T) {
		task := "Get the weather forecast for Paris, then write it to a file"
		var queries []string
		count := func(q string, o Options) []Hit {
			queries = append(queries, q)
			return ix.Search(q, o)
		}
		got := ids(SearchTask(count, task, nil, Options{Limit: 3}))
		if !slices.Equal(queries, []string{"Get the weather forecast for Paris", "write it to a file", task}) {
			t.Errorf("searched %q, want each step, then the task", queries)
		}
		if len(got) != 3 || got[0] != ids(ix.Search(task, Options{Limit: 1}))[0] {
			t.Errorf("hits %v: want 3, the task's best first", got)
		}
		if !slices.Contains(got, "weather.get-forecast") || !slices.Contains(got, "files.write_file") {
			t.Errorf("hits %v lack a step's tool", got)
		}
	})
}

func TestAnchor(t *testing.T) {
	task := []Hit{{ID: "a", Score: 10}, {ID: "b", Score: 5}, {ID: "c", Score: 1}}
	step := []Hit{{ID: "c", Score: 4, Tier: TierFuzzy}, {ID: "d", Score: 4}, {ID: "e", Score: 1}}
	// a 2, b 1, c 1 + 0.2, d 1, e 0.25; ties by ID.
	got := anchor([][]Hit{step, nil}, task, 4)
	want := [][]Hit{{{ID: "a", Score: 10}, {ID: "c", Score: 4, Tier: TierFuzzy}, {ID: "b", Score: 5}, {ID: "d", Score: 4}}, nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("anchor (-want +got):\n%s", diff)
	}
}

// BenchmarkSplitTaskLong splits 64 KB tasks built from the inputs that
// made SplitTask quadratic: a period and a carriage return repeated (9 s
// before), and thousands of short pieces joining one step (50-106 ms).
func BenchmarkSplitTaskLong(b *testing.B) {
	for _, unit := range []string{".\r", "Save it. ", "and find ", "- save it\n"} {
		task := "Find the weather report. Send the email. " + strings.Repeat(unit, (64<<10)/len(unit))
		b.Run(strings.TrimSpace(strings.ReplaceAll(unit, "\r", "CR")), func(b *testing.B) {
			for b.Loop() {
				SplitTask(task)
			}
		})
	}
}
