package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Event kinds of a Record kiln itself writes; the catalog's events
// (register, deregister, drift, hidden) come with their own kind.
const (
	EventCall   = "call"
	EventReload = "reload"
)

// Outcomes of a call Record.
const (
	OutcomeOK          = "ok"
	OutcomeIsError     = "isError"
	OutcomeDenied      = "refused-by-policy"
	OutcomeRateLimited = "rate-limited"
	OutcomeTimeout     = "timeout"
	OutcomeBackendDown = "backend-down"
	OutcomeCanceled    = "canceled"
	OutcomeError       = "error"
)

// Record is one line of the audit log. Fields that do not apply to an
// event are left out of its line.
type Record struct {
	Time     time.Time `json:"time"`
	Replica  string    `json:"replica,omitempty"`
	Event    string    `json:"event"`
	Identity string    `json:"identity,omitempty"`
	Session  string    `json:"session,omitempty"`
	Profile  string    `json:"profile,omitempty"`
	// Tool is backend.tool for a call; Backend names the backend of the
	// other events.
	Tool    string `json:"tool,omitempty"`
	Backend string `json:"backend,omitempty"`
	Tier    string `json:"tier,omitempty"`
	// ArgsSHA256 is the SHA-256 of the arguments' canonical JSON (keys
	// sorted, no insignificant space), so a reviewer can match a call to
	// arguments they hold without the log holding them.
	ArgsSHA256 string          `json:"args_sha256,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	// Code is the dispatch code of a call that failed in kiln.
	Code        string  `json:"code,omitempty"`
	DurationMS  float64 `json:"duration_ms,omitempty"`
	ResultBytes int     `json:"result_bytes,omitempty"`
	Detail      string  `json:"detail,omitempty"`
}

// Outcome classifies a call's result for the log.
func Outcome(res *toolcall.Result, err error) (outcome, code string) {
	if err == nil {
		if res != nil && res.IsError {
			return OutcomeIsError, ""
		}
		return OutcomeOK, ""
	}
	c := dispatch.CodeOf(err)
	switch {
	case c == dispatch.CodeDenied:
		return OutcomeDenied, string(c)
	case c == dispatch.CodeRateLimited:
		return OutcomeRateLimited, string(c)
	case c == dispatch.CodeTimeout || errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout, string(c)
	case c == dispatch.CodeCanceled || errors.Is(err, context.Canceled):
		return OutcomeCanceled, string(c)
	case c == dispatch.CodeUnavailable || c == dispatch.CodeStarting || c == dispatch.CodeNotConfigured:
		return OutcomeBackendDown, string(c)
	}
	return OutcomeError, string(c)
}

// resultBytes is the size of what the backend answered, as sent.
func resultBytes(res *toolcall.Result) int {
	if res == nil {
		return 0
	}
	n := len(res.StructuredContent)
	for _, c := range res.Content {
		n += len(c)
	}
	return n
}

// Canonical returns args as canonical JSON: object keys sorted, numbers
// as written, no insignificant space, no HTML escaping. Arguments that
// are not exactly one JSON value in valid UTF-8 (trailing bytes, invalid
// UTF-8 that decoding would fold into U+FFFD) come back as they are, so
// their digest still tells two calls apart.
func Canonical(args []byte) []byte {
	if len(bytes.TrimSpace(args)) == 0 {
		return []byte("{}")
	}
	if !utf8.Valid(args) {
		return args
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || len(bytes.TrimSpace(args[d.InputOffset():])) > 0 {
		return args
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return args
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Digest is the hex SHA-256 of args' canonical JSON.
func Digest(args []byte) string { return digestOf(Canonical(args)) }

func digestOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
