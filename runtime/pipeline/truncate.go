package pipeline

import (
	"strconv"
	"strings"

	"github.com/kilnmcp/kiln/runtime/textcut"
)

// markerReserve is room kept for a truncation marker and the newlines
// around it; the longest marker, with ten-digit counts, is under 110 bytes.
const markerReserve = 128

// truncateMiddle cuts s to at most limit bytes, keeping the first 60% and
// the last 40% of the budget: setup lives at the head of tool output and
// results, errors and summaries at the tail. Whole lines are kept when that
// keeps at least half the budget; otherwise (one long line, or a few huge
// ones) the cut falls between graphemes and the single-line marker is used.
func truncateMiddle(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	budget := limit - markerReserve
	if budget < limit/2 {
		budget = limit / 2
	}
	headBudget := budget * 6 / 10
	tailBudget := budget - headBudget

	var out string
	if h, t := lineCut(s, headBudget, tailBudget); h+len(s)-t >= budget/2 && h+len(s)-t > 0 {
		total, shownHead, shownTail := countLines(s), countLines(s[:h]), countLines(s[t:])
		marker := "... [" + strconv.Itoa(total-shownHead-shownTail) + " lines / " + kb(t-h) +
			" truncated — showing first " + strconv.Itoa(shownHead) + " + last " +
			strconv.Itoa(shownTail) + " lines] ..."
		out = s[:h] + lineBreak(s[:h]) + marker + "\n" + s[t:]
	} else {
		h = textcut.Before(s, headBudget)
		t = textcut.After(s, len(s)-tailBudget)
		if t < h {
			t = h
		}
		out = s[:h] + "\n... [truncated middle — " + kb(t-h) + " omitted] ...\n" + s[t:]
	}
	if len(out) > limit {
		// Only a limit too small for any marker gets here.
		return s[:textcut.Before(s, limit)], true
	}
	return out, true
}

// lineCut returns the end of the longest run of whole lines from the start
// that fits headBudget, and the start of the longest run of whole lines at
// the end that fits tailBudget, never overlapping.
func lineCut(s string, headBudget, tailBudget int) (h, t int) {
	for h < len(s) {
		j := strings.IndexByte(s[h:], '\n')
		if j < 0 || h+j+1 > headBudget {
			break
		}
		h += j + 1
	}
	t = len(s)
	for t > h {
		// h is 0 or just past a newline, so it always starts a line.
		k := h
		if j := strings.LastIndexByte(s[h:t-1], '\n'); j >= 0 {
			k = h + j + 1
		}
		if len(s)-k > tailBudget {
			break
		}
		t = k
	}
	return h, t
}

// countLines counts lines the way an editor does: a final line without a
// newline still counts.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

func lineBreak(head string) string {
	if head == "" || head[len(head)-1] == '\n' {
		return ""
	}
	return "\n"
}

// capHead is the hard cap: a head-only cut at limit bytes with a marker the
// model can read, or a bare cut when limit has no room for one. The cut
// backs up to the last line end when that loses under a quarter of the room.
func capHead(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := func(omitted int) string {
		return "\n... [output cut at max_output_size — " + kb(omitted) + " omitted] ..."
	}
	room := limit - len(marker(len(s)))
	if room < limit/2 {
		return s[:textcut.Before(s, limit)]
	}
	h := strings.LastIndexByte(s[:room], '\n') + 1
	if h < room-room/4 {
		h = textcut.Before(s, room)
	}
	m := marker(len(s) - h)
	if h > 0 && s[h-1] == '\n' {
		m = m[1:]
	}
	return s[:h] + m
}
