package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Defaults of Options left zero.
const (
	DefaultFlushEvery = 200 * time.Millisecond
	DefaultMaxSize    = 100 << 20
	DefaultKeep       = 5
	// batchLen wakes the writer before FlushEvery once this many records
	// wait, so a busy gateway writes bigger batches, not later ones.
	batchLen = 512
	// maxPending bounds what waits in memory while the disk refuses
	// writes; records beyond it are counted as dropped, and Problem says so.
	maxPending = 100_000
)

// Options configure a Log.
type Options struct {
	// Path is the JSONL file; empty writes no file (Sinks alone).
	Path string
	// MaxSize rotates the file before a batch would take it past this
	// many bytes; Keep is how many rotated files (path.1 … path.Keep) stay.
	MaxSize int64
	Keep    int
	// Values keeps the arguments themselves in each call line; without
	// it a line has only their digest.
	Values bool
	// Replica names this kiln in every line (gateway.replica or the host).
	Replica string
	// FlushEvery is how often a batch is written and fsynced.
	FlushEvery time.Duration
	// Sinks see every record as it is written, from the writer goroutine:
	// OpenTelemetry's log exporter, the console's live log.
	Sinks  []Sink
	Logger *slog.Logger
}

// Sink is one more reader of the records. Every reader shares the one
// Caller wrapper, batch and digest; each decides for itself whether its
// records carry the argument values.
type Sink struct {
	Emit func(Record)
	// Values: Args holds the arguments' canonical JSON; else only the
	// digest, as in the file without Options.Values.
	Values bool
}

// Log is an audit log; see the package doc. Safe for concurrent use.
type Log struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	pending []Record
	spare   []Record
	dropped uint64
	closed  bool

	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	// Owned by the writer goroutine.
	f     *os.File
	size  int64
	retry []byte // encoded lines a failed write left for the next try
	buf   []byte // the last batch's buffer, reused

	problem struct {
		sync.Mutex
		err error
	}
}

// Open opens (creating, mode 0600) the log at opts.Path and starts its
// writer. An error names the file and why; kiln refuses to start on it
// rather than run unaudited.
func Open(opts Options) (*Log, error) {
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Keep < 0 {
		opts.Keep = 0
	}
	l := &Log{opts: opts, log: opts.Logger, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if opts.Path != "" {
		if err := l.open(); err != nil {
			return nil, err
		}
	}
	go l.run()
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log %s: %w (gateway.audit.path must name a file kiln can create and append to)", l.opts.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", l.opts.Path, err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Add queues r for the next batch; it never blocks on the disk.
func (l *Log) Add(r Record) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	if r.Replica == "" {
		r.Replica = l.opts.Replica
	}
	l.mu.Lock()
	if l.closed || len(l.pending) >= maxPending {
		// A call that ends after Close (kiln stopping) or past the bound
		// is counted; Close and Problem report the count.
		l.dropped++
		l.mu.Unlock()
		return
	}
	l.pending = append(l.pending, r)
	full := len(l.pending) >= batchLen
	l.mu.Unlock()
	if full {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Problem says why the log is not keeping up (a write failed, records
// were dropped), or nil; kiln://health shows it.
func (l *Log) Problem() error {
	if l == nil {
		return nil
	}
	l.problem.Lock()
	err := l.problem.err
	l.problem.Unlock()
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	if dropped > 0 {
		err = errors.Join(err, fmt.Errorf("%d audit records dropped while the log could not keep up", dropped))
	}
	return err
}

// Close writes what is pending and closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("audit records were dropped", "path", l.opts.Path, "dropped", dropped)
	}
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}

func (l *Log) run() {
	defer close(l.done)
	t := time.NewTicker(l.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.wake:
		case <-l.stop:
			l.flush()
			return
		}
		l.flush()
	}
}

// flush writes the pending batch: one write, one fsync.
func (l *Log) flush() {
	l.mu.Lock()
	batch := l.pending
	// The spare slice, emptied, takes the next batch: no regrowth.
	l.pending, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	defer func() {
		clear(batch) // drop the strings the records hold
		l.mu.Lock()
		l.spare = batch[:0]
		l.mu.Unlock()
	}()
	if len(batch) == 0 && len(l.retry) == 0 {
		return
	}
	buf := append(l.buf[:0], l.retry...)
	l.retry = nil
	defer func() {
		if cap(buf) <= 1<<20 {
			l.buf = buf
		}
	}()
	for i := range batch {
		r := &batch[i]
		var values json.RawMessage
		if r.Event == EventCall && r.Args != nil {
			canon := Canonical(r.Args)
			r.ArgsSHA256 = digestOf(canon)
			if json.Valid(canon) {
				values = canon
			}
		}
		r.Args = nil
		if l.opts.Values {
			r.Args = values
		}
		buf = appendRecord(buf, r)
		for _, s := range l.opts.Sinks {
			rec := *r
			rec.Args = nil
			if s.Values {
				rec.Args = values
			}
			s.Emit(rec)
		}
	}
	if l.opts.Path == "" {
		return
	}
	l.write(buf)
}

func (l *Log) write(b []byte) {
	if l.f == nil {
		// A rotation that failed half way left no file open.
		if err := l.open(); err != nil {
			l.failed(b, err)
			return
		}
	}
	if l.size > 0 && l.size+int64(len(b)) > l.opts.MaxSize {
		if err := l.rotate(); err != nil {
			l.failed(b, err)
			return
		}
	}
	n, err := l.f.Write(b)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		if n > 0 {
			// Cut back to the last whole line: a line half written now
			// would be glued to the next batch's first.
			if terr := l.f.Truncate(l.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		l.failed(b, err)
		return
	}
	l.size += int64(n)
	l.setProblem(nil)
}

// failed keeps b for the next flush (bounded) and reports err.
func (l *Log) failed(b []byte, err error) {
	if len(b) <= maxPending*256 {
		l.retry = append([]byte(nil), b...)
	} else {
		l.mu.Lock()
		l.dropped += uint64(bytes.Count(b, []byte("\n")))
		l.mu.Unlock()
	}
	l.setProblem(fmt.Errorf("cannot write the audit log %s: %w", l.opts.Path, err))
}

func (l *Log) setProblem(err error) {
	l.problem.Lock()
	was := l.problem.err
	l.problem.err = err
	l.problem.Unlock()
	switch {
	case err != nil && was == nil:
		l.log.Error("audit log write failed; calls go on, records wait in memory and kiln://health is degraded until a write succeeds", "path", l.opts.Path, "err", err)
	case err == nil && was != nil:
		l.log.Info("audit log writes again", "path", l.opts.Path)
	}
}

// rotate moves path to path.1 (path.1 to path.2, …, dropping path.Keep)
// and starts an empty path.
func (l *Log) rotate() error {
	if err := l.f.Close(); err != nil {
		return err
	}
	l.f = nil
	p := l.opts.Path
	if l.opts.Keep == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		for i := l.opts.Keep - 1; i >= 1; i-- {
			if err := os.Rename(p+"."+strconv.Itoa(i), p+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := os.Rename(p, p+".1"); err != nil {
			return err
		}
	}
	if err := l.open(); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		_ = d.Sync() // the renames survive a crash
		d.Close()
	}
	return nil
}
