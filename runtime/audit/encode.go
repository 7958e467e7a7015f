package audit

import (
	"strconv"
	"time"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// appendRecord appends r as one JSON line, as encoding/json would write
// it (same keys, same omissions, invalid UTF-8 as U+FFFD) without its
// reflection: the writer encodes every call, and this is most of its work.
func appendRecord(b []byte, r *Record) []byte {
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendField(b, "replica", r.Replica)
	b = appendField(b, "event", r.Event)
	b = appendField(b, "identity", r.Identity)
	b = appendField(b, "session", r.Session)
	b = appendField(b, "profile", r.Profile)
	b = appendField(b, "tool", r.Tool)
	b = appendField(b, "backend", r.Backend)
	b = appendField(b, "tier", r.Tier)
	b = appendField(b, "args_sha256", r.ArgsSHA256)
	if len(r.Args) > 0 {
		b = append(b, `,"args":`...)
		b = append(b, r.Args...)
	}
	b = appendField(b, "outcome", r.Outcome)
	b = appendField(b, "code", r.Code)
	if r.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendFloat(b, r.DurationMS, 'f', -1, 64)
	}
	if r.ResultBytes != 0 {
		b = append(b, `,"result_bytes":`...)
		b = strconv.AppendInt(b, int64(r.ResultBytes), 10)
	}
	b = appendField(b, "detail", r.Detail)
	return append(b, "}\n"...)
}

// appendField appends ,"key":"value" unless value is empty.
func appendField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	return jsontext.AppendString(b, value, jsontext.ValidUTF8)
}
