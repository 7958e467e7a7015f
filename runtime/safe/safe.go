package safe

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Recover turns a panic into an error in log (slog's default when nil)
// naming what, the work that stopped; defer it first on the goroutine.
func Recover(log *slog.Logger, what string) {
	if p := recover(); p != nil {
		Report(log, what, p)
	}
}

// Go runs f on a goroutine of its own under Recover.
func Go(log *slog.Logger, what string, f func()) {
	go func() {
		defer Recover(log, what)
		f()
	}()
}

// AsError turns a panic into *err, logged as Recover logs it; deferred
// first in a function that answers someone (a backend waiting on its
// question), the one waiting gets an answer instead of kiln ending.
func AsError(log *slog.Logger, what string, err *error) {
	if p := recover(); p != nil {
		Report(log, what, p)
		// The panic's value stays in kiln's log: the error may go to a
		// backend, which has no business reading kiln's internals.
		*err = fmt.Errorf("%s failed with an internal error (kiln logged it)", what)
	}
}

// Report logs p, a panic recovered by the caller's own deferred function,
// as Recover does: for a hot path that builds what only when it panicked.
func Report(log *slog.Logger, what string, p any) {
	if log == nil {
		log = slog.Default()
	}
	log.Error("recovered a panic: "+what+" stopped; kiln goes on without it", "panic", p, "stack", string(debug.Stack()))
}
