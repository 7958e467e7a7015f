package static

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Raw is a full word-vector set: Words in the file's order (most frequent
// first) and their vectors, Dim floats each, row i of Vecs for Words[i].
type Raw struct {
	Dim   int
	Words []string
	Vecs  []float32
}

// Read loads the word vectors at path: the wink-embeddings JSON form
// (`{"dimensions": D, ..., "vectors": {"word": [D floats, l2norm, index],
// ...}}`), detected by a leading '{', or GloVe's text form, one
// "word f1 ... fD" line a word. Either lists words most frequent first,
// which the weights rely on.
func Read(path string) (*Raw, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("word vectors: %w", err)
	}
	var r *Raw
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		r, err = readWink(t)
	} else {
		r, err = readText(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("word vectors %s: %w", path, err)
	}
	if len(r.Words) == 0 {
		return nil, fmt.Errorf("word vectors %s: %w: no words", path, ErrFormat)
	}
	return r, nil
}

func readText(rd io.Reader) (*Raw, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	r := &Raw{}
	line := 0
	for sc.Scan() {
		line++
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if line == 1 && len(f) == 2 {
			// word2vec's text header: "count dim".
			if _, err := strconv.Atoi(string(f[0])); err == nil {
				continue
			}
		}
		if r.Dim == 0 {
			r.Dim = len(f) - 1
		}
		if len(f)-1 != r.Dim || r.Dim == 0 {
			return nil, fmt.Errorf("%w: line %d has %d values, want %d", ErrFormat, line, len(f)-1, r.Dim)
		}
		r.Words = append(r.Words, string(f[0]))
		for _, x := range f[1:] {
			v, err := strconv.ParseFloat(string(x), 32)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
			}
			r.Vecs = append(r.Vecs, float32(v))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// readWink scans the wink JSON by hand: encoding/json takes tens of
// seconds and gigabytes for its 300 MB of numbers. Only "dimensions" and
// "vectors" are read; each vector's two trailing values (l2 norm, index)
// are dropped, and words come in the order of the "vectors" object, which
// is the frequency order of "words".
func readWink(b []byte) (*Raw, error) {
	s := &scan{b: b}
	r := &Raw{}
	s.expect('{')
	for s.err == nil {
		s.ws()
		if s.peek() == '}' {
			break
		}
		key := s.str()
		s.expect(':')
		switch key {
		case "dimensions":
			r.Dim = int(s.num())
		case "vectors":
			if r.Dim <= 0 {
				return nil, fmt.Errorf("%w: \"vectors\" before a positive \"dimensions\"", ErrFormat)
			}
			s.vectors(r)
		default:
			s.skip()
		}
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
	return r, s.err
}

type scan struct {
	b   []byte
	i   int
	err error
}

func (s *scan) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s at byte %d", ErrFormat, what, s.i)
	}
}

func (s *scan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\r' || s.b[s.i] == '\t') {
		s.i++
	}
}

func (s *scan) peek() byte {
	if s.err != nil || s.i >= len(s.b) {
		s.fail("unexpected end")
		return 0
	}
	return s.b[s.i]
}

func (s *scan) expect(c byte) {
	s.ws()
	if s.peek() != c {
		s.fail(fmt.Sprintf("want %q", c))
		return
	}
	s.i++
}

func (s *scan) str() string {
	s.ws()
	if s.peek() != '"' {
		s.fail("want a string")
		return ""
	}
	start := s.i
	s.i++
	esc := false
	for s.i < len(s.b) && s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			esc = true
			s.i++
		}
		s.i++
	}
	if s.i >= len(s.b) {
		s.fail("unterminated string")
		return ""
	}
	s.i++
	if !esc {
		return string(s.b[start+1 : s.i-1])
	}
	v, err := strconv.Unquote(string(s.b[start:s.i]))
	if err != nil {
		s.fail("bad string escape")
	}
	return v
}

func (s *scan) num() float64 {
	s.ws()
	start := s.i
	for s.i < len(s.b) && bytes.IndexByte([]byte("+-.eE0123456789"), s.b[s.i]) >= 0 {
		s.i++
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil {
		s.fail("want a number")
	}
	return v
}

// skip passes over one JSON value of any kind.
func (s *scan) skip() {
	s.ws()
	depth := 0
	for s.err == nil && s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.str()
			if depth == 0 {
				return
			}
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth <= 0 {
				s.i++
				return
			}
		case ',':
			if depth == 0 {
				return
			}
		}
		s.i++
	}
}

func (s *scan) vectors(r *Raw) {
	s.expect('{')
	for s.err == nil {
		s.ws()
		if s.peek() == '}' {
			s.i++
			return
		}
		w := s.str()
		s.expect(':')
		s.expect('[')
		n := 0
		for s.err == nil {
			v := s.num()
			if n < r.Dim {
				r.Vecs = append(r.Vecs, float32(v))
			}
			n++
			s.ws()
			if s.peek() == ',' {
				s.i++
				continue
			}
			s.expect(']')
			break
		}
		if n < r.Dim {
			s.fail(fmt.Sprintf("word %q has %d values, want %d", w, n, r.Dim))
		}
		r.Words = append(r.Words, w)
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
}
