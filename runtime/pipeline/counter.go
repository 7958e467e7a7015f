package pipeline

import "sync"

// Counter accumulates pipeline Stats across calls for the kiln://stats
// resource. It is safe for concurrent use; the zero value is ready. A mutex
// rather than atomics keeps each Snapshot consistent: processed, returned
// and saved always describe the same set of calls.
type Counter struct {
	mu        sync.Mutex
	calls     int64
	processed int64
	returned  int64
	stages    [len(stageOrder)]int64
}

// Snapshot is a Counter's totals at one moment, shaped for JSON.
type Snapshot struct {
	// Calls is the number of results that went through the pipeline.
	Calls int64 `json:"calls"`
	// BytesProcessed is the text the pipeline received.
	BytesProcessed int64 `json:"bytes_processed"`
	// BytesReturned is the text it passed on to the model.
	BytesReturned int64 `json:"bytes_returned"`
	// BytesSaved is BytesProcessed minus BytesReturned.
	BytesSaved int64 `json:"bytes_saved"`
	// Stages counts, per stage name, the calls in which that stage changed
	// the output. Every stage is present, with zero when it never fired.
	Stages map[string]int64 `json:"stages"`
}

// Add records one call's Stats.
func (c *Counter) Add(s Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.processed += int64(s.Processed)
	c.returned += int64(s.Returned)
	for i, name := range stageOrder {
		if contains(s.Stages, name) {
			c.stages[i]++
		}
	}
}

// Snapshot returns the totals so far.
func (c *Counter) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		Calls:          c.calls,
		BytesProcessed: c.processed,
		BytesReturned:  c.returned,
		BytesSaved:     c.processed - c.returned,
		Stages:         make(map[string]int64, len(stageOrder)),
	}
	for i, name := range stageOrder {
		s.Stages[name] = c.stages[i]
	}
	return s
}
