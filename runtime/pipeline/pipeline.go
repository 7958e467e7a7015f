package pipeline

import (
	"encoding/json"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Stats describes one pipeline run.
type Stats struct {
	// Processed is the size in bytes of the text that entered the pipeline.
	Processed int
	// Returned is the size in bytes of what left it, notes and footer
	// included. It never exceeds Processed.
	Returned int
	// Stages names, in pipeline order, the stages that changed the text.
	Stages []string
}

// Saved returns the bytes the pipeline kept from the model.
func (s Stats) Saved() int { return s.Processed - s.Returned }

// add merges the stats of another block, keeping Stages in pipeline order.
func (s *Stats) add(t Stats) {
	s.Processed += t.Processed
	s.Returned += t.Returned
	var merged []string
	for _, name := range stageOrder {
		if contains(s.Stages, name) || contains(t.Stages, name) {
			merged = append(merged, name)
		}
	}
	s.Stages = merged
}

// Text runs the pipeline on one text.
//
// The stages run in order, each on the previous one's output: the intent
// filter, JSON auto-chunking, smart truncation, the hard cap and the size
// footer. The intent filter's note and the footer form a trailer after a
// blank line, so a chunked JSON body stays parseable up to it:
//
//	<body>
//
//	[Intent filter: kept 3 of 40 paragraphs mentioning at least 30% of: timeout, error]
//	[Output: 4.1KB returned, 55.0KB processed, 92% reduced]
//
// The footer's "returned" counts the body only; the reduction it reports is
// processed minus body, and the footer appears when that exceeds
// FooterThreshold. When the result would not be shorter than s and s fits
// MaxOutputSize, s comes back unchanged.
func Text(s string, o Options) (string, Stats) {
	o = o.withDefaults()
	out, st, _ := run(s, o, o.MaxOutputSize, false)
	return out, st
}

// Result runs the pipeline on every text block of r and returns a new
// result; r is not modified. Image, audio, resource and other blocks,
// structuredContent, _meta and isError are kept as they are. Error results
// skip the intent filter: the part of an error that matters rarely mentions
// what the caller hoped to find.
//
// MaxOutputSize bounds the text of all blocks together: each block gets
// what the blocks before it left; once a block has been cut to fit what was
// left, the text blocks after it are dropped (the cut block's marker says
// so).
func Result(r *toolcall.Result, o Options) (*toolcall.Result, Stats) {
	if r == nil {
		return nil, Stats{}
	}
	o = o.withDefaults()
	out := *r
	out.Content = make([]json.RawMessage, 0, len(r.Content))
	var total Stats
	budget := o.MaxOutputSize
	for _, raw := range r.Content {
		text, ok := textBlock(raw)
		if !ok {
			out.Content = append(out.Content, raw)
			continue
		}
		if budget <= 0 {
			total.add(Stats{Processed: len(text), Stages: []string{StageCap}})
			continue
		}
		got, st, full := run(text, o, budget, r.IsError)
		budget -= st.Returned
		if full {
			budget = 0 // a sliver of the next block would only confuse
		}
		total.add(st)
		if got == text {
			out.Content = append(out.Content, raw)
			continue
		}
		out.Content = append(out.Content, withText(raw, got))
	}
	return &out, total
}

// textBlock returns the text of a content block of type "text" with a
// string text. It finds the two members without decoding the block: a
// map of every member was a tenth of a short tool call's CPU
// (BenchmarkEchoHop); withText decodes one when the text changes.
func textBlock(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '{' || !jsontext.Valid(raw) {
		return decodedText(raw)
	}
	block := string(raw)
	var typ, text string
	for k, v := range jsontext.Members(block) {
		switch k {
		case `"type"`:
			typ = v
		case `"text"`:
			text = v
		default:
			if strings.IndexByte(k, '\\') >= 0 {
				// A key spelled with escapes: let the decoder judge.
				return decodedText(raw)
			}
		}
	}
	if typ != `"text"` || len(text) == 0 || text[0] != '"' {
		return decodedText(raw)
	}
	return jsontext.DecodeString(text), true
}

// decodedText is textBlock by a full decode, for blocks the scan cannot
// judge on its own (an escaped key or type).
func decodedText(raw json.RawMessage) (string, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return "", false
	}
	var typ, text string
	if json.Unmarshal(fields["type"], &typ) != nil || typ != "text" ||
		json.Unmarshal(fields["text"], &text) != nil {
		return "", false
	}
	return text, true
}

// withText returns the text block raw with its text replaced, its other
// members as they were.
func withText(raw json.RawMessage, text string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil { // textBlock accepted raw; cannot happen
		return raw
	}
	fields["text"] = appendJSONString(nil, text)
	block, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return block
}

// run is Text with an explicit byte limit, which Result shares among blocks.
// The bool reports that the limit, not TruncateAt, decided where s was cut.
func run(s string, o Options, limit int, isError bool) (string, Stats, bool) {
	body := s
	var notes, stages []string
	intentOn := o.IntentFilter && !isError && o.Intent != "" && len(body) > o.IntentThreshold
	var doc string
	var isJSON bool
	if intentOn || o.AutoChunkJSON && len(body) > o.ChunkThreshold {
		doc, isJSON = parseContainer(body)
	}
	if intentOn {
		if out, note, ok := filterIntent(body, doc, isJSON, o.Intent); ok && len(out) < len(body) {
			body, notes, stages = out, append(notes, note), append(stages, StageIntent)
			doc = out // filterJSON returns valid JSON; for text isJSON stays false
		}
	}
	if o.AutoChunkJSON && isJSON && len(body) > o.ChunkThreshold {
		if out, ok := chunkDoc(body, doc); ok {
			body, stages = out, append(stages, StageJSON)
		}
	}
	// Under a limit tighter than TruncateAt (a small MaxOutputSize, or the
	// last of Result's shared budget) smart truncation still gets to keep
	// the tail: it aims below the limit, leaving room for the trailer.
	// (A body under half the limit is never cut, so the room is not needed.)
	truncAt, full := o.TruncateAt, false
	if len(body) > limit/2 {
		if room := limit - trailerRoom(notes, len(s), o.SizeFooter); room < truncAt {
			truncAt, full = max(room, limit/2), true
		}
	}
	if o.SmartTruncation && len(body) > truncAt {
		if out, ok := truncateMiddle(body, truncAt); ok {
			body, stages = out, append(stages, StageTruncate)
		}
	} else {
		full = false
	}

	// The trailer counts against the limit and is best effort: beside a
	// body that fits, it is dropped rather than cutting content for it.
	// When the body must be cut anyway, room is kept for it, unless that
	// would take over half the limit.
	footerOn := o.SizeFooter
	if len(body) > limit {
		reserve := trailerRoom(notes, len(s), footerOn)
		if reserve > limit/2 {
			notes, footerOn, reserve = nil, false, 0
		}
		body, stages, full = capHead(body, limit-reserve), append(stages, StageCap), true
	}
	lines := notes
	if footerOn && len(s)-len(body) > FooterThreshold {
		lines = append(lines, footer(len(body), len(s)))
	}
	out := body
	if len(lines) > 0 {
		out = body + lineBreak(body) + "\n" + strings.Join(lines, "\n")
		if len(out) > limit {
			out, lines = body, nil
		}
	}
	if len(lines) > len(notes) {
		stages = append(stages, StageFooter)
	}
	if len(out) >= len(s) && len(s) <= limit {
		return s, Stats{Processed: len(s), Returned: len(s)}, false
	}
	return out, Stats{Processed: len(s), Returned: len(out), Stages: stages}, full
}

// trailerRoom is the most the trailer can take for an input of processed
// bytes: the notes, the footer at its widest (returned has at most
// processed's digits and the percentage at most three, where footer(n, n)
// shows one) and the separators.
func trailerRoom(notes []string, processed int, footerOn bool) int {
	n := 0
	for _, note := range notes {
		n += len(note) + 1
	}
	if footerOn {
		n += len(footer(processed, processed)) + 2 + 1
	}
	if n > 0 {
		n += 2
	}
	return n
}
