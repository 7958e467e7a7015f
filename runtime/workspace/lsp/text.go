package lsp

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// Lines splits text into lines without their line ends (\n or \r\n).
func Lines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// UTF16Col converts a zero-based character (rune) column of line into
// UTF-16 code units; past the end it clamps to the line's end.
func UTF16Col(line string, runes int) int {
	n := 0
	for _, r := range line {
		if runes == 0 {
			break
		}
		runes--
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// RuneCol converts a UTF-16 column of line into a zero-based rune column.
func RuneCol(line string, units int) int {
	n := 0
	for _, r := range line {
		if units <= 0 {
			break
		}
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
		n++
	}
	return n
}

// offset is the byte offset of p in text (positions past a line's end
// clamp to it, past the last line to the end of text).
func offset(text string, p Position) int {
	off := 0
	for range p.Line {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	end := strings.IndexByte(text[off:], '\n')
	line := text[off:]
	if end >= 0 {
		line = text[off : off+end]
	}
	units := p.Character
	for i, r := range line {
		if units <= 0 {
			return off + i
		}
		if r == utf8.RuneError {
			units--
			continue
		}
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
	}
	return off + len(line)
}

// ErrOverlap is returned for edits that overlap one another.
var ErrOverlap = errors.New("the server's edits overlap")

// Apply applies edits to text, as LSP defines them: all positions refer
// to the original text.
func Apply(text string, edits []TextEdit) (string, error) {
	type span struct {
		start, end int
		text       string
	}
	spans := make([]span, 0, len(edits))
	for _, e := range edits {
		s, en := offset(text, e.Range.Start), offset(text, e.Range.End)
		if en < s {
			return "", ErrOverlap
		}
		spans = append(spans, span{s, en, e.NewText})
	}
	slices.SortStableFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for _, s := range spans {
		if s.start < last {
			return "", ErrOverlap
		}
		b.WriteString(text[last:s.start])
		b.WriteString(s.text)
		last = s.end
	}
	b.WriteString(text[last:])
	return b.String(), nil
}
