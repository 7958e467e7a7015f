package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// prefix starts every key kiln writes, so a database shared with other
// programs stays readable; the database number in the URL separates fleets.
const prefix = "kiln:"

// opTimeout bounds one Redis operation made without a deadline of its
// own: a call path never waits long on shared state.
const opTimeout = 5 * time.Second

// ErrUnavailable wraps every failure to reach Redis, so callers can tell
// an outage from bad data.
var ErrUnavailable = errors.New("shared state (gateway.state_url) unreachable")

// Redis is a connection to the shared state database. It is safe for
// concurrent use.
type Redis struct {
	c    *redis.Client
	addr string // host:port or socket, for messages; never the password
	log  *slog.Logger
	up   atomic.Bool
	down atomic.Pointer[error] // the last probe's failure while unreachable
	stop context.CancelFunc
	done chan struct{}
}

// Options tune Open; zero values take the defaults.
type Options struct {
	Logger *slog.Logger
	// Probe is how often the monitor pings Redis (default 2s).
	Probe time.Duration
}

// Open connects to the Redis database rawURL names and pings it within
// timeout. A Redis that does not answer is an error: kiln must not fall
// back to local files and disagree with the rest of its fleet.
func Open(ctx context.Context, rawURL string, timeout time.Duration, o Options) (*Redis, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("gateway.state_url: %v; write e.g. redis://127.0.0.1:6379/0", redactErr(err, rawURL))
	}
	opt.DialTimeout = min(timeout, 2*time.Second)
	opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 3*time.Second
	opt.MaxRetries = 1
	opt.DisableIdentity = true // CLIENT SETINFO is refused by older servers and proxies
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	r := &Redis{c: redis.NewClient(opt), addr: opt.Addr, log: log, done: make(chan struct{})}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.c.Ping(pctx).Err(); err != nil {
		r.c.Close()
		return nil, fmt.Errorf("gateway.state_url: Redis at %s did not answer within %s (%v); start it or fix the URL: kiln keeps runtime registrations, usage counts and OAuth tokens there and does not fall back to gateway.state_dir",
			r.addr, timeout, err)
	}
	r.up.Store(true)
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	go r.monitor(mctx, cmpDur(o.Probe, 2*time.Second))
	log.Info("shared state in Redis", "addr", r.addr, "db", opt.DB)
	return r, nil
}

// quiet drops the Redis client's own log lines (one per failed dial):
// the monitor reports an outage once, in kiln's log, and errors reach
// callers.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

func cmpDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// redactErr keeps a password written into the URL out of a parse error.
func redactErr(err error, raw string) error {
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return err
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
	}
	return err
}

// Addr is the server's address, for messages.
func (r *Redis) Addr() string { return r.addr }

// Up reports whether the last probe reached Redis.
func (r *Redis) Up() bool { return r.up.Load() }

// Err says why the last probe did not reach Redis, or nil when it did.
func (r *Redis) Err() error {
	if r.up.Load() {
		return nil
	}
	if e := r.down.Load(); e != nil {
		return *e
	}
	return ErrUnavailable
}

// Close stops the monitor and closes the connections.
func (r *Redis) Close() error {
	r.stop()
	<-r.done
	return r.c.Close()
}

// monitor pings Redis and logs each change of reachability once, so an
// outage is visible in kiln's log without a line per failed call.
func (r *Redis) monitor(ctx context.Context, every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, min(every, opTimeout))
		err := r.c.Ping(pctx).Err()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e := fmt.Errorf("%w: Redis at %s: %v", ErrUnavailable, r.addr, err)
			r.down.Store(&e)
		}
		switch was := r.up.Swap(err == nil); {
		case was && err != nil:
			r.log.Error("shared state unreachable: registrations, deregistrations and token refreshes fail and usage counts wait until Redis answers again",
				"addr", r.addr, "err", err)
		case !was && err == nil:
			r.log.Info("shared state reachable again", "addr", r.addr)
		}
	}
}

// fail wraps a Redis error as ErrUnavailable unless it is a data error.
func (r *Redis) fail(op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	return fmt.Errorf("%w: %s at %s: %v", ErrUnavailable, op, r.addr, err)
}

// bounded gives ctx a deadline when it has none.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, opTimeout)
}

// Hash is a named set of records (field → bytes) every replica sees, with
// change notices.
type Hash struct {
	r            *Redis
	key, channel string
	lockKey      string
	epochKey     string
}

// Hash returns the records named name.
func (r *Redis) Hash(name string) *Hash {
	return &Hash{r: r, key: prefix + name, channel: prefix + name + ":changed", lockKey: prefix + name + ":lock:", epochKey: prefix + name + ":epoch"}
}

// All returns every record.
func (h *Hash) All(ctx context.Context) (map[string][]byte, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	m, err := h.r.c.HGetAll(ctx, h.key).Result()
	if err != nil {
		return nil, h.r.fail("read "+h.key, err)
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out, nil
}

// Get returns one record, or nil when there is none.
func (h *Hash) Get(ctx context.Context, field string) ([]byte, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	v, err := h.r.c.HGet(ctx, h.key, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, h.r.fail("read "+h.key, err)
	}
	return v, nil
}

// Create stores val under field unless a record is there already; it
// reports whether it stored it. The check and the write are one Redis
// command, so two replicas cannot both create the same field.
func (h *Hash) Create(ctx context.Context, field string, val []byte) (bool, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	ok, err := h.r.c.HSetNX(ctx, h.key, field, val).Result()
	if err != nil {
		return false, h.r.fail("write "+h.key, err)
	}
	if ok {
		h.notify(ctx)
	}
	return ok, nil
}

// Put stores val under field, replacing any record.
func (h *Hash) Put(ctx context.Context, field string, val []byte) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := h.r.c.HSet(ctx, h.key, field, val).Err(); err != nil {
		return h.r.fail("write "+h.key, err)
	}
	h.notify(ctx)
	return nil
}

// Delete removes field's record; a missing one is not an error.
func (h *Hash) Delete(ctx context.Context, field string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := h.r.c.HDel(ctx, h.key, field).Err(); err != nil {
		return h.r.fail("write "+h.key, err)
	}
	h.notify(ctx)
	return nil
}

// Fields lists the fields with a record.
func (h *Hash) Fields(ctx context.Context) ([]string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	keys, err := h.r.c.HKeys(ctx, h.key).Result()
	if err != nil {
		return nil, h.r.fail("read "+h.key, err)
	}
	return keys, nil
}

// notify tells the other replicas that the records changed. A lost notice
// costs only latency: watchers also resynchronise on their own.
func (h *Hash) notify(ctx context.Context) {
	if err := h.r.c.Publish(ctx, h.channel, "1").Err(); err != nil {
		h.r.log.Warn("could not announce a shared state change; other replicas pick it up at their next resync", "key", h.key, "err", err)
	}
}
