package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter counts calls per key across every replica: a token bucket for
// rates and a set of leases for calls in flight (runtime/policy's Counter).
type Limiter struct {
	r    *Redis
	base string
}

// inFlightLease bounds how long a call in flight is counted: the lease of
// a replica that died mid-call runs out instead of holding the slot
// forever; a call running longer stops being counted then.
const inFlightLease = 10 * time.Minute

// Limiter returns the counters named name.
func (r *Redis) Limiter(name string) *Limiter { return &Limiter{r: r, base: prefix + name + ":"} }

// takeScript refills and spends a token bucket on Redis's clock, so
// replicas with skewed clocks agree; it returns the wait in seconds as a
// string (Lua numbers come back truncated to integers otherwise).
var takeScript = redis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call("HMGET", KEYS[1], "tokens", "at")
local tokens = tonumber(v[1]) or burst
local at = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call("HSET", KEYS[1], "tokens", tostring(tokens), "at", tostring(now))
redis.call("PEXPIRE", KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)`)

// Take spends one call of key's bucket (burst calls, refilled at rate per
// second) and returns 0, or how long until a call is free.
func (l *Limiter) Take(ctx context.Context, key string, rate float64, burst int) (time.Duration, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	s, err := takeScript.Run(ctx, l.r.c, []string{l.base + "rate:" + key},
		strconv.FormatFloat(rate, 'g', -1, 64), strconv.Itoa(burst)).Text()
	if err != nil {
		return 0, l.r.fail("rate "+key, err)
	}
	w, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, l.r.fail("rate "+key, err)
	}
	return time.Duration(w * float64(time.Second)), nil
}

// enterScript drops expired leases, then adds one unless max are held.
var enterScript = redis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]))
return 1`)

// Enter counts one call of key in flight across the fleet unless max
// already are; release ends it.
func (l *Limiter) Enter(ctx context.Context, key string, max int) (func(), bool, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	var b [12]byte
	_, _ = rand.Read(b[:])
	lease := hex.EncodeToString(b[:])
	zkey := l.base + "flight:" + key
	n, err := enterScript.Run(ctx, l.r.c, []string{zkey}, max, inFlightLease.Milliseconds(), lease).Int()
	if err != nil {
		return nil, false, l.r.fail("max_in_flight "+key, err)
	}
	if n == 0 {
		return nil, false, nil
	}
	return func() {
		// The call's own context may be canceled already; the lease
		// must go anyway (or it runs out with inFlightLease).
		rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := l.r.c.ZRem(rctx, zkey, lease).Err(); err != nil {
			l.r.log.Warn("max_in_flight lease not released; it expires by itself", "key", key, "err", l.r.fail("release", err))
		}
	}, true, nil
}
