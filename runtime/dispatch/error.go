package dispatch

import (
	"errors"
	"fmt"
)

// Code classifies a dispatch failure so callers can choose how to present
// it without matching strings.
type Code string

// Codes returned in *Error.
const (
	CodeNotFound      Code = "not_found"
	CodeInvalidArgs   Code = "invalid_arguments"
	CodeStarting      Code = "backend_starting"
	CodeUnavailable   Code = "backend_unavailable"
	CodeBusy          Code = "backend_busy"
	CodeNotConfigured Code = "backend_not_configured"
	CodeTimeout       Code = "timeout"
	CodeCanceled      Code = "canceled"
	CodeBackend       Code = "backend_error"
	CodeUnsupported   Code = "unsupported"
	// CodeDenied: the caller's identity may not use this tool (policies:).
	CodeDenied Code = "denied_by_policy"
	// CodeRateLimited: the caller's identity is over its rate or
	// max_in_flight; the message says when to retry.
	CodeRateLimited Code = "rate_limited"
)

// Error is a failure to get a result from a backend, written for the model
// that made the call: what happened and what to do next.
type Error struct {
	Code    Code
	Backend string
	Tool    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s.%s: %v", e.Backend, e.Tool, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the code of a dispatch error, or "" for other errors.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
