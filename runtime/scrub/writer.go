package scrub

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// maxPending bounds the bytes a LineWriter holds while waiting for a
// newline, so a runaway line without one cannot grow memory without limit.
const maxPending = 64 << 10

// LineWriter scrubs a byte stream line by line, for logs and backend
// stderr. A line is held until its newline arrives, so a secret split
// across Write calls is still caught whole. Lines longer than 64 KiB are
// passed on in pieces cut at whitespace where possible; a secret spanning
// such a cut could slip through. A private key block spans lines, so after
// a BEGIN line every line is dropped until the END line, and lines that
// look like a key body are held until a line that is not one arrives, then
// scrubbed with it as one block: a key whose BEGIN line never came (a
// stream joined mid-key) is still redacted from its END line back.
//
// Safe for concurrent use. Call Flush when the stream ends to pass on a
// final line that has no newline.
type LineWriter struct {
	sc *Scrubber
	w  io.Writer

	mu      sync.Mutex
	pending []byte
	inKey   bool     // inside a private key block whose END line is still to come
	held    []string // key body lines waiting for the line after them
}

// maxHeld bounds the key body lines a LineWriter holds: a PGP key block,
// the longest, has about 80.
const maxHeld = 128

// Writer returns a LineWriter that scrubs into w. With a nil Scrubber it
// still buffers lines but changes nothing.
func (sc *Scrubber) Writer(w io.Writer) *LineWriter {
	return &LineWriter{sc: sc, w: w}
}

// Write scrubs every complete line in p, together with what earlier calls
// left pending, and writes it to the underlying writer. It reports len(p)
// on success even though the bytes written differ, as io.Writer requires.
func (lw *LineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.pending = append(lw.pending, p...)
	done := 0
	for {
		nl := bytes.IndexByte(lw.pending[done:], '\n')
		if nl < 0 {
			break
		}
		if err := lw.emit(lw.pending[done:done+nl], true); err != nil {
			return 0, err
		}
		done += nl + 1
	}
	for len(lw.pending)-done >= maxPending {
		cut := done + maxPending
		if ws := bytes.LastIndexAny(lw.pending[done:cut], " \t"); ws > 0 {
			cut = done + ws + 1
		}
		if err := lw.emit(lw.pending[done:cut], false); err != nil {
			return 0, err
		}
		done = cut
	}
	lw.pending = append(lw.pending[:0], lw.pending[done:]...)
	return len(p), nil
}

// Flush scrubs and writes a pending partial line.
func (lw *LineWriter) Flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if len(lw.pending) == 0 && len(lw.held) == 0 {
		return nil
	}
	err := lw.emit(lw.pending, false)
	lw.pending = lw.pending[:0]
	return err
}

// emit scrubs one line (without its newline) and writes it.
func (lw *LineWriter) emit(line []byte, newline bool) error {
	s := string(line)
	if lw.inKey {
		end := strings.Index(s, "-----END ")
		if end < 0 {
			return nil
		}
		c := strings.Index(s[end+9:], "-----")
		if c < 0 {
			return nil
		}
		lw.inKey = false
		s = s[end+9+c+5:]
		if s == "" {
			return nil
		}
	}
	if newline && len(lw.held) < maxHeld && keyBodyLine(s, len(lw.held) > 0) {
		lw.held = append(lw.held, s)
		return nil
	}
	if len(lw.held) > 0 {
		lw.held = append(lw.held, s)
		s = strings.Join(lw.held, "\n")
		lw.held = lw.held[:0]
	}
	out, open := lw.sc.text(s)
	lw.inKey = open
	if newline {
		out += "\n"
	}
	_, err := io.WriteString(lw.w, out)
	return err
}

// keyBodyLine reports whether line, indentation aside, could be a line of
// a private key body; after one, a short base64 line could be its last.
func keyBodyLine(line string, after bool) bool {
	t := strings.Trim(line, " \t\r\",'")
	if strings.ContainsAny(t, "%&\\") || !isASCII(t) {
		d, _ := decodeWindow(t)
		t = strings.Trim(d.text, " \t\r\",'")
	}
	for i := 0; i < len(t); i++ {
		if !b64Std[t[i]] {
			return false
		}
	}
	return bodyLine(t) || after && t != ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
