package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

// maxHTTPBody bounds one POST body; the largest request the tests send is
// a few hundred bytes.
const maxHTTPBody = 64 << 20

// tap sees every JSON-RPC message before the SDK dispatches it. It exists
// because the SDK does not show a tool handler the request's JSON-RPC id, and
// because a crash must happen after the request reached the process but
// before any handler could answer it.
type tap struct {
	events     *eventLog
	stderr     io.Writer
	crashAfter int64
	calls      atomic.Int64
}

// wireMessage is the part of a JSON-RPC message the tap looks at.
type wireMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// inspect records one frame, which holds a message or (before 2025-06-18) a
// batch of them. Frames it cannot decode are left for the SDK to reject.
func (t *tap) inspect(frame []byte) {
	frame = bytes.TrimSpace(frame)
	if len(frame) > 0 && frame[0] == '[' {
		var batch []wireMessage
		if json.Unmarshal(frame, &batch) != nil {
			return
		}
		for _, m := range batch {
			t.message(m)
		}
		return
	}
	var m wireMessage
	if json.Unmarshal(frame, &m) == nil {
		t.message(m)
	}
}

func (t *tap) message(m wireMessage) {
	switch m.Method {
	case "tools/call":
		n := t.calls.Add(1)
		t.events.add("call %s id=%s", m.Params.Name, rawID(m.ID))
		if n == t.crashAfter {
			fmt.Fprintf(t.stderr, "faultserver: crashing on call %d as asked\n", n)
			t.events.add("exit 3 crash-after call %d", n)
			os.Exit(3)
		}
	case "notifications/cancelled":
		t.events.add("cancel-notification id=%s", rawID(m.Params.RequestID))
	}
}

// rawID renders a JSON-RPC id or progress token as its JSON text, with a
// string's quotes removed so `id=7` and `id=abc` read alike.
func rawID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 {
		return "none"
	}
	return string(raw)
}

// pump copies newline-delimited frames from r to w, inspecting each one
// before the SDK can read it. It closes w when r ends.
func (t *tap) pump(r io.Reader, w *io.PipeWriter) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			t.inspect(line)
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err == io.EOF {
			_ = w.Close()
			return
		}
		if err != nil {
			_ = w.CloseWithError(err)
			return
		}
	}
}

// handler inspects each POST body and hands the request on unchanged.
func (t *tap) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
			if err != nil {
				http.Error(w, "faultserver: read body: "+err.Error(), http.StatusBadRequest)
				return
			}
			t.inspect(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		next.ServeHTTP(w, r)
	})
}
