package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/rawio"
)

// TestScanRequestTopMembers: the read loop routes on what the envelope
// scan reports, so it must report the id and method the decoder would
// see, and flag names the decoder matches in other ways.
func TestScanRequestTopMembers(t *testing.T) {
	for _, tc := range []struct {
		line       string
		ok         bool
		id, method string
		odd        bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"id":"no","method":"no"}}}`, true, `7`, `"tools/call"`, false},
		{`{"method":"tools/call","id":"a\"b"}`, true, `"a\"b"`, `"tools/call"`, false},
		{` { "id" : -1.5e3 , "method" : "ping" } `, true, `-1.5e3`, `"ping"`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, ``, `"notifications/initialized"`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"method":"tools/call"}}`, true, `1`, ``, false},
		// The decoder matches names case-insensitively and keeps the last
		// of duplicates: such lines are left to it.
		{`{"id":1,"Method":"tools/call"}`, true, `1`, `"tools/call"`, true},
		{`{"id":1,"method":"ping","method":"tools/call"}`, true, `1`, `"tools/call"`, true},
		{`{"ID":1,"method":"tools/call"}`, true, `1`, `"tools/call"`, true},
		// Not plain: the slow path decides.
		{`{"id":{},"method":"tools/call"}`, false, ``, ``, false},
		{`{"id":1,"method":5}`, false, ``, ``, false},
		{`{"i\u0064":1,"method":"tools/call"}`, false, ``, ``, false},
		{`[{"id":1,"method":"tools/call"}]`, false, ``, ``, false},
	} {
		var top topMembers
		ok := scanRequest([]byte(tc.line), &top)
		if ok != tc.ok {
			t.Errorf("scanRequest(%s) = %v, want %v", tc.line, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		got := []string{string(top.id), string(top.method), fmt.Sprint(top.odd)}
		want := []string{tc.id, tc.method, fmt.Sprint(tc.odd)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("scanRequest(%s) id, method, odd (-want +got):\n%s", tc.line, diff)
		}
	}
}

// TestStdioSequentialCallsReuseWorkers: a client that sends its next call
// when it has read an answer is served by two or three worker goroutines,
// whose stacks have grown once, however many calls it makes: one serves a
// call while another reads on, then they swap.
func TestStdioSequentialCallsReuseWorkers(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sdk := &lockedBuffer{}
	l := s.runStdioLoop(t.Context(), inR, outW, sdk)
	answers := bufio.NewReader(outR)
	for i := range 20 {
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"}}}`+"\n", i)
		raw, err := answers.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil || resp.ID != i || resp.Result.IsError {
			t.Fatalf("answer %d: %s (%v)", i, raw, err)
		}
	}
	// A line that is not a tools/call goes to the SDK's stdio server.
	ping := `{"jsonrpc":"2.0","id":99,"method":"ping"}` + "\n"
	fmt.Fprint(inW, ping)
	inW.Close()
	if err := <-l.read; err != io.EOF {
		t.Errorf("reading ended with %v, want EOF", err)
	}
	l.stop()
	// Two take turns; a third may start when the next call is read before
	// the worker that wrote the last answer counts itself idle (a worker
	// stays busy until its answer is written), and on a loaded machine
	// (the race detector on two cores) that can happen a few times. A
	// goroutine per call would be 20.
	if l.nworkers < 2 || l.nworkers > 5 {
		t.Errorf("%d workers served 20 sequential calls, want 2 to 5", l.nworkers)
	}
	if got := sdk.String(); got != ping {
		t.Errorf("the SDK got %q, want the ping only", got)
	}
	if _, err := l.route(t.Context(), []byte(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"tool_info"}}`+"\n")); err != errListenEnded {
		t.Errorf("route after stop = %v, want errListenEnded", err)
	}
}

// TestStdioReadsOnWhileAnAnswerWaits: a client slow to read one call's
// answer does not stop kiln reading its next lines — the next call starts
// and a ping reaches the SDK — as mcp-go's own loop kept reading.
func TestStdioReadsOnWhileAnAnswerWaits(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sdk := &lockedBuffer{}
	l := s.runStdioLoop(t.Context(), inR, outW, sdk)
	call := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"}}}`+"\n", i)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s; the SDK got %q", what, sdk.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Fprint(inW, call(1))
	// Registered when read, removed once its answer is ready, before it
	// is written to out, which nobody reads yet.
	waitFor("call 1 answered", func() bool {
		l.inflight.mu.Lock()
		defer l.inflight.mu.Unlock()
		return l.inflight.all != nil && len(l.inflight.all) == 0
	})
	go func() {
		fmt.Fprint(inW, call(2))
		fmt.Fprint(inW, `{"jsonrpc":"2.0","id":99,"method":"ping"}`+"\n")
	}()
	waitFor("the ping after call 2 reaches the SDK", func() bool { return strings.Contains(sdk.String(), `"id":99`) })
	go io.Copy(io.Discard, outR)
	inW.Close()
	<-l.read
	l.stop()
}

// TestServeStdioEndsWhenTheClientStopsReading: a client that closed its
// end of kiln's stdout but not of its stdin can no longer be answered, so
// the session ends with the write's error (as raw stdout, package rawio,
// reports EPIPE instead of killing kiln with SIGPIPE) instead of serving
// calls nobody reads until stdin ends.
func TestServeStdioEndsWhenTheClientStopsReading(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR.Close()
	out, err := rawio.New(outW)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(t.Context(), inR, out) }()
	fmt.Fprint(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"}}}`+"\n")
	select {
	case err := <-served:
		if !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("ServeStdio = %v, want EPIPE", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("ServeStdio still serving a minute after its client stopped reading")
	}
}
