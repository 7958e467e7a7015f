package pipeline

// Defaults. The first three come from the seed (INTENT_SEARCH_THRESHOLD,
// chunk_threshold, max_output_size); DefaultTruncateAt is kiln's own.
const (
	// DefaultIntentThreshold is the size above which an intent filters output.
	DefaultIntentThreshold = 5000
	// DefaultChunkThreshold is the size above which JSON output is chunked.
	DefaultChunkThreshold = 10240
	// DefaultTruncateAt is where smart truncation cuts the middle out.
	// 40,000 bytes is about 10,000 tokens of English or JSON at ~4 bytes a
	// token: under Claude Code's 25,000-token MAX_MCP_OUTPUT_TOKENS (past it
	// the client rejects the result) and under its 50,000-character mark
	// (past it the client moves the result to a file the model must read
	// back). Truncating here keeps head and tail instead of letting a client
	// drop the tail or the whole answer.
	DefaultTruncateAt = 40000
	// DefaultMaxOutputSize is the hard cap on a result's text, in bytes.
	DefaultMaxOutputSize = 200000
	// FooterThreshold is the reduction, in bytes, past which the size footer
	// is appended; smaller savings are not worth the footer's own bytes.
	FooterThreshold = 200
)

// Stage names, as reported in Stats.Stages and Snapshot.Stages, in pipeline
// order.
const (
	// StageIntent is the intent filter.
	StageIntent = "intent_filter"
	// StageJSON is JSON auto-chunking.
	StageJSON = "auto_chunk_json"
	// StageTruncate is smart (head and tail) truncation.
	StageTruncate = "smart_truncation"
	// StageCap is the hard cap at MaxOutputSize.
	StageCap = "max_output_size"
	// StageFooter is the size footer.
	StageFooter = "size_footer"
)

var stageOrder = [...]string{StageIntent, StageJSON, StageTruncate, StageCap, StageFooter}

// Options configures one pipeline run. The zero value turns every stage off;
// start from DefaultOptions. A size field at zero or below means its default.
type Options struct {
	// Intent is the caller's call_tool_chain intent argument; empty skips
	// the intent filter.
	Intent string
	// MaxOutputSize caps, in bytes, what Text returns or the text blocks of
	// a Result together, notes and footer included. It always applies.
	MaxOutputSize int

	// IntentFilter keeps only the sections of large output that mention
	// the intent's terms.
	IntentFilter bool
	// AutoChunkJSON replaces large JSON with a compact summary.
	AutoChunkJSON bool
	// SmartTruncation cuts the middle out of output longer than TruncateAt,
	// keeping 60% head and 40% tail. Off, only the head-only hard cap at
	// MaxOutputSize remains: the seed's legacy behaviour.
	SmartTruncation bool
	// SizeFooter appends "[Output: …]" when the pipeline saved more than
	// FooterThreshold bytes.
	SizeFooter bool

	// IntentThreshold is the size in bytes above which the intent filter runs.
	IntentThreshold int
	// ChunkThreshold is the size in bytes above which JSON is chunked.
	ChunkThreshold int
	// TruncateAt is the size in bytes above which smart truncation runs.
	// When MaxOutputSize (or what is left of it, see Result) is tighter,
	// smart truncation aims just under that instead, so a small cap still
	// keeps the tail.
	TruncateAt int
}

// DefaultOptions returns every stage on with the seed's thresholds.
func DefaultOptions() Options {
	return Options{
		MaxOutputSize:   DefaultMaxOutputSize,
		IntentFilter:    true,
		AutoChunkJSON:   true,
		SmartTruncation: true,
		SizeFooter:      true,
		IntentThreshold: DefaultIntentThreshold,
		ChunkThreshold:  DefaultChunkThreshold,
		TruncateAt:      DefaultTruncateAt,
	}
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxOutputSize, DefaultMaxOutputSize)
	def(&o.IntentThreshold, DefaultIntentThreshold)
	def(&o.ChunkThreshold, DefaultChunkThreshold)
	def(&o.TruncateAt, DefaultTruncateAt)
	return o
}
