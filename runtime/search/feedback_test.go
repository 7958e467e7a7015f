package search

import (
	"slices"
	"testing"
)

func feedbackCorpus() []Doc {
	return []Doc{
		{ID: "osm.find_parking", Backend: "osm", Name: "find_parking", Description: "Find parking facilities near a location."},
		{ID: "osm.find_charging", Backend: "osm", Name: "find_charging", Description: "Find EV charging facilities near a location."},
		{ID: "trip.plan", Backend: "trip", Name: "plan", Description: "Plan a trip agenda."},
		{ID: "chat.ask", Backend: "chat", Name: "ask", Description: "Ask anything: I can help you with whatever you want."},
		{ID: "notes.write", Backend: "notes", Name: "write", Description: "Write a note."},
	}
}

func TestQueryStop(t *testing.T) {
	for _, tc := range []struct {
		stop bool
		q    string
		want []string
	}{
		// Request words match the chat tool's self-description, not the task.
		{false, "I want you to help me park", []string{"chat.ask", "osm.find_parking"}},
		{true, "I want you to help me park", []string{"osm.find_parking"}},
		{true, "Can you please help me with my trip?", []string{"trip.plan"}},
		// A query of nothing else still searches its words.
		{true, "help me", []string{"chat.ask"}},
	} {
		cfg := DefaultConfig()
		cfg.QueryStop = tc.stop
		cfg.Feedback = Feedback{}
		expectSearch(t, BuildWith(feedbackCorpus(), cfg), tc.q, tc.want...)
	}
}

func TestFeedbackFindsSiblings(t *testing.T) {
	// find_charging shares no word with the query, only with its best match.
	for _, tc := range []struct {
		fb   Feedback
		want bool
	}{
		{Feedback{}, false},
		{Feedback{Docs: 1, Terms: 5, Weight: 0.2}, true},
		{Feedback{Docs: 1, Terms: 5, Weight: 0}, false},
	} {
		cfg := DefaultConfig()
		cfg.Feedback = tc.fb
		ix := BuildWith(feedbackCorpus(), cfg)
		hits := ix.Search("where to park", Options{})
		if len(hits) == 0 || hits[0].ID != "osm.find_parking" {
			t.Fatalf("%+v: hits %v, want osm.find_parking first", tc.fb, ids(hits))
		}
		if got := slices.Contains(ids(hits), "osm.find_charging"); got != tc.want {
			t.Errorf("%+v: osm.find_charging listed = %v, want %v (hits %v)", tc.fb, got, tc.want, ids(hits))
		}
		// Feedback words are the tools' words the query lacks: the query's own
		// word is not added again, so the best hit keeps its lead.
		if len(hits) > 1 && hits[1].Score >= hits[0].Score {
			t.Errorf("%+v: %v outranks the best match", tc.fb, hits[1])
		}
	}
}

func TestFeedbackOverlay(t *testing.T) {
	// A run-time tool lends its words like a frozen one.
	docs := feedbackCorpus()
	cfg := DefaultConfig()
	cfg.Feedback = Feedback{Docs: 1, Terms: 5, Weight: 0.2}
	base := BuildWith(docs[2:], cfg)
	ix := base.With(docs[:2])
	if got := ids(ix.Search("where to park", Options{})); !slices.Contains(got, "osm.find_charging") {
		t.Errorf("hits %v, want osm.find_charging through feedback", got)
	}
	if got := ids(ix.Search("where to park", Options{})); slices.Contains(got, "chat.ask") {
		t.Errorf("hits %v list chat.ask, which shares no word with find_parking", got)
	}
}
