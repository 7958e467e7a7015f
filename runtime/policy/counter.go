package policy

import (
	"context"
	"sync"
	"time"
)

// localCounter counts in this process: a token bucket and an in-flight
// count per key under one mutex (a call holds it for a few map operations).
type localCounter struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*bucket
	flying  map[string]int
}

type bucket struct {
	tokens float64
	at     time.Time
	rate   float64 // the last call's limits, for pruneLocked
	burst  int
}

// NewLocalCounter counts each identity's calls in this process.
func NewLocalCounter() Counter {
	return &localCounter{now: time.Now, buckets: map[string]*bucket{}, flying: map[string]int{}}
}

func (c *localCounter) Take(_ context.Context, key string, rate float64, burst int) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	b := c.buckets[key]
	if b == nil {
		if len(c.buckets) >= maxBuckets {
			c.pruneLocked(now)
		}
		b = &bucket{tokens: float64(burst), at: now}
		c.buckets[key] = b
	}
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at, b.rate, b.burst = now, rate, burst
	if b.tokens >= 1 {
		b.tokens--
		return 0, nil
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second)), nil
}

// maxBuckets bounds the identities a process keeps buckets for (loopback
// clients are identities by address); past it, full buckets are dropped,
// which forgets nothing: a full bucket is what a new one starts as.
const maxBuckets = 10000

func (c *localCounter) pruneLocked(now time.Time) {
	for k, b := range c.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*b.rate >= float64(b.burst) {
			delete(c.buckets, k)
		}
	}
}

func (c *localCounter) Enter(_ context.Context, key string, max int) (func(), bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flying[key] >= max {
		return nil, false, nil
	}
	c.flying[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.flying[key]--; c.flying[key] <= 0 {
				delete(c.flying, key)
			}
		})
	}, true, nil
}
