package audit

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecord appends r as one JSON line, as encoding/json would write
// it (same keys, same omissions) without its reflection: the writer
// encodes every call, and this is most of its work.
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
	return appendString(b, value)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 as U+FFFD, as encoding/json
// does (but leaving <, > and & alone, as the log is not HTML).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
