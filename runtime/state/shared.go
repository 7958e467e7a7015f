package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Watch calls changed after another replica (or this one) changes the
// records, and also on every (re)subscription and every resync interval:
// Redis pub/sub delivers a notice within milliseconds but at most once, so
// a notice published while this replica's subscription was reconnecting
// would otherwise be lost. It returns when ctx ends.
func (h *Hash) Watch(ctx context.Context, resync time.Duration, changed func()) {
	ps := h.r.c.Subscribe(ctx, h.channel)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions()
	t := time.NewTicker(resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-t.C:
		}
		changed()
	}
}

// allEpochScript reads a hash with its epoch key, writing ARGV[1] there
// first when the key is missing, in one step: a reader never sees records
// of one epoch with the ID of another.
var allEpochScript = redis.NewScript(`
local e = redis.call("get", KEYS[2])
if not e then e = ARGV[1]; redis.call("set", KEYS[2], e) end
return {e, redis.call("hgetall", KEYS[1])}`)

// AllWithEpoch returns every record and the records' epoch: an ID that
// stays the same while Redis keeps its data and changes when the records
// were all lost (Redis restarted without persistence, or flushed), so a
// replica can tell that loss from other replicas deleting records.
func (h *Hash) AllWithEpoch(ctx context.Context) (map[string][]byte, string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	var b [16]byte
	_, _ = rand.Read(b[:])
	v, err := allEpochScript.Run(ctx, h.r.c, []string{h.key, h.epochKey}, hex.EncodeToString(b[:])).Slice()
	if err != nil {
		return nil, "", h.r.fail("read "+h.key, err)
	}
	var epoch string
	var flat []any
	if len(v) == 2 {
		epoch, _ = v[0].(string)
		flat, _ = v[1].([]any)
	}
	if epoch == "" || len(flat)%2 != 0 {
		return nil, "", fmt.Errorf("read %s: unexpected answer %v", h.key, v)
	}
	out := make(map[string][]byte, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		out[k] = []byte(val)
	}
	return out, epoch, nil
}

// unlockScript deletes a lock only if this holder still owns it, so a
// holder that outlived its lease cannot release the next holder's lock.
var unlockScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// writeIfHeldScript writes (ARGV[3] set) or deletes a hash field only while
// this holder still owns the lock (KEYS[1]), so a holder whose lease ran out
// cannot overwrite what the next holder stored. It returns 1 when it wrote.
var writeIfHeldScript = redis.NewScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == "1" then redis.call("hset", KEYS[2], ARGV[2], ARGV[4]) else redis.call("hdel", KEYS[2], ARGV[2]) end
return 1`)

// Update runs fn on field's record (nil when absent) while holding a lock
// every replica honours, and stores what fn returns; nil deletes the
// record. The lock lasts at most lease, so a replica killed while holding
// it blocks the others for no longer; fn must finish within it. Update
// waits for the lock until ctx ends.
func (h *Hash) Update(ctx context.Context, field string, lease time.Duration, fn func(cur []byte) ([]byte, error)) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	lk := h.lockKey + field
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %q: another replica held its lock until the deadline: %w", h.key, field, ctx.Err())
		case <-wait.C:
		}
		lctx, cancel := bounded(ctx)
		ok, err := h.r.c.SetNX(lctx, lk, token, lease).Result()
		cancel()
		if err != nil {
			return h.r.fail("lock "+lk, err)
		}
		if ok {
			break
		}
		wait.Reset(25 * time.Millisecond)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		if err := unlockScript.Run(uctx, h.r.c, []string{lk}, token).Err(); err != nil {
			h.r.log.Warn("could not release a shared state lock; it expires on its own", "key", lk, "lease", lease, "err", err)
		}
	}()
	cur, err := h.Get(ctx, field)
	if err != nil {
		return err
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	// fn may have spent something that cannot be spent twice (a rotating
	// refresh token): the write gets its own deadline rather than what
	// is left of the wait's, and lands only while the lock is still ours.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	set, val := "0", ""
	if next != nil {
		set, val = "1", string(next)
	}
	wrote, err := writeIfHeldScript.Run(wctx, h.r.c, []string{lk, h.key}, token, field, set, val).Int()
	if err != nil {
		return h.r.fail("write "+h.key, err)
	}
	if wrote == 0 {
		return fmt.Errorf("%s %q: the update took longer than its %s lock lease and another replica may have changed it since; nothing was written", h.key, field, lease)
	}
	h.notify(wctx)
	return nil
}

// Counters is a named set of counts every replica adds to.
type Counters struct {
	r   *Redis
	key string
}

// Counters returns the counts named name.
func (r *Redis) Counters(name string) *Counters { return &Counters{r: r, key: prefix + name} }

// Add adds delta to the shared counts and returns all of them, in one
// round trip.
func (c *Counters) Add(ctx context.Context, delta map[string]uint64) (map[string]uint64, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	pipe := c.r.c.TxPipeline()
	for k, n := range delta {
		if n > 0 {
			pipe.HIncrBy(ctx, c.key, k, int64(n))
		}
	}
	all := pipe.HGetAll(ctx, c.key)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, c.r.fail("count in "+c.key, err)
	}
	out := make(map[string]uint64, len(all.Val()))
	for k, v := range all.Val() {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue // not written by kiln; a count cannot be negative
		}
		out[k] = n
	}
	return out, nil
}
