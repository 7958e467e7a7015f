package safe

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// lines hands each log record written to it to the test.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// A panic on a goroutine Go started is logged with its stack and what
// stopped, and the process goes on (without Recover the test binary would
// die here).
func TestGoRecoversAndLogs(t *testing.T) {
	logged := make(lines, 1)
	Go(slog.New(slog.NewTextHandler(logged, nil)), "the refresh of backend x", func() {
		items := []string{}
		_ = items[len(items)] // a runtime panic: index out of range
	})
	out := <-logged
	for _, want := range []string{"level=ERROR", "the refresh of backend x stopped", "index out of range", "stack=", "safe_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// Recover does nothing when nothing panicked.
func TestRecoverWithoutPanic(t *testing.T) {
	var buf bytes.Buffer
	func() {
		defer Recover(slog.New(slog.NewTextHandler(&buf, nil)), "nothing")
	}()
	if buf.Len() != 0 {
		t.Errorf("logged without a panic: %s", buf.String())
	}
}

// AsError makes a panic the function's error, so whoever waits on the
// answer gets one, and logs it with its stack.
func TestAsError(t *testing.T) {
	var buf bytes.Buffer
	ask := func() (err error) {
		defer AsError(slog.New(slog.NewTextHandler(&buf, nil)), "kiln's handling of backend b's roots/list", &err)
		var p *struct{ n int }
		_ = p.n // a nil dereference: a runtime panic
		return nil
	}
	err := ask()
	if err == nil || !strings.Contains(err.Error(), "kiln's handling of backend b's roots/list failed with an internal error") {
		t.Errorf("err = %v; want the panic as an error naming the work", err)
	}
	if strings.Contains(err.Error(), "nil pointer") {
		t.Errorf("err = %v: the panic's value goes to kiln's log, not to whoever gets the error", err)
	}
	if out := buf.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "stack=") || !strings.Contains(out, "nil pointer dereference") {
		t.Errorf("the panic was not logged with its stack:\n%s", out)
	}
}

// Report logs a panic its caller recovered, as Recover does.
func TestReport(t *testing.T) {
	var buf bytes.Buffer
	func() {
		defer func() {
			if p := recover(); p != nil {
				Report(slog.New(slog.NewTextHandler(&buf, nil)), "handling backend b's notifications/progress", p)
			}
		}()
		panic("bad params")
	}()
	for _, want := range []string{"level=ERROR", "handling backend b's notifications/progress stopped", "bad params", "stack="} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}
