package state_test

import (
	"testing"

	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

// TestLimiterSharedBetweenReplicas: two replicas (two connections) spend
// one identity's bucket and in-flight slots together, and another
// identity's counts stay its own.
func TestLimiterSharedBetweenReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL).Limiter("limits"), open(t, srv.URL).Limiter("limits")
	// 1 call per 100 s, burst 4: no refill during the test, however slow.
	ok := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wait, err := l.Take(t.Context(), "jwt alice", 0.01, 4)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			ok++
		} else if wait < 50e9 {
			t.Errorf("wait %v, want about 100s for a bucket refilled at 0.01/s", wait)
		}
	}
	if ok != 4 {
		t.Errorf("%d of 10 calls taken across two replicas, want 4 (the burst)", ok)
	}
	if wait, err := b.Take(t.Context(), "jwt bob", 0.01, 4); err != nil || wait != 0 {
		t.Errorf("another identity: wait %v, err %v", wait, err)
	}

	rel1, ok1, err := a.Enter(t.Context(), "jwt alice", 2)
	if err != nil || !ok1 {
		t.Fatalf("first enter: %v %v", ok1, err)
	}
	rel2, ok2, _ := b.Enter(t.Context(), "jwt alice", 2)
	if _, ok3, _ := a.Enter(t.Context(), "jwt alice", 2); !ok2 || ok3 {
		t.Fatalf("second enter %v, third %v: want the third refused across replicas", ok2, ok3)
	}
	if _, okBob, _ := b.Enter(t.Context(), "jwt bob", 2); !okBob {
		t.Error("another identity refused")
	}
	rel1()
	rel4, ok4, _ := b.Enter(t.Context(), "jwt alice", 2)
	if !ok4 {
		t.Error("a slot released on one replica is not free on the other")
	}
	rel2()
	rel4()
}
