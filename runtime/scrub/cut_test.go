package scrub

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Fabricated key body lines: 64 bytes of mixed base64, and a short last one.
var (
	keyLine1 = strings.Repeat("Qk9mZ2x5", 8)
	keyLine2 = strings.Repeat("c3R1ZmZ+", 8)
	keyLine3 = strings.Repeat("aGVsbG8v", 8)
	keyLast  = "VGFpbA8x=="
)

func TestCutKeys(t *testing.T) {
	sc := New(Options{})
	end := "-----END PRIVATE KEY-----"
	tests := []struct{ name, in, want string }{
		{"end only", keyLine1 + "\n" + keyLast + "\n" + end + "\nbye", "[REDACTED:private-key]\nbye"},
		{"end only after text", "last stderr lines:\n    " + keyLine2 + "\n    " + end, "last stderr lines:\n    [REDACTED:private-key]"},
		{"end only escaped", `err="tail:\n    ` + keyLine1 + `\n    ` + end + `" next=1`, `err="tail:\n    [REDACTED:private-key]" next=1`},
		{"end only double escaped", `"x:\\n` + keyLine1 + `\\n` + end + `"`, `"x:\\n[REDACTED:private-key]"`},
		{"end only in a json array", "[\n  \"" + keyLine1 + "\",\n  \"" + end + "\"\n]", "[\n  \"[REDACTED:private-key]\"\n]"},
		{"end joined by spaces", "echo " + keyLine1 + " " + keyLast + " " + end, "echo [REDACTED:private-key]"},
		{"end with nothing before", "see\n" + end, "see\n" + end},
		{"end after prose", "ends with " + end, "ends with " + end},
		{"end of a certificate", keyLine1 + "\n-----END CERTIFICATE-----", keyLine1 + "\n-----END CERTIFICATE-----"},
		{"body run", "a\n" + keyLine1 + "\n" + keyLine2 + "\n" + keyLine3 + "\nb", "a\n[REDACTED:private-key]\nb"},
		{"body run at start", keyLine1 + "\n" + keyLine2 + "\n" + keyLine3, "[REDACTED:private-key]"},
		{"body run with partial first and short last", keyLine1[30:] + "\n" + keyLine2 + "\n" + keyLine3 + "\n" + keyLine1 + "\n" + keyLine2[:20] + "\nz",
			"[REDACTED:private-key]\nz"},
		{"two body lines are no run", "a\n" + keyLine1 + "\n" + keyLine2 + "\nb", "a\n" + keyLine1 + "\n" + keyLine2 + "\nb"},
		{"certificate body", "-----BEGIN CERTIFICATE-----\n" + keyLine1 + "\n" + keyLine2 + "\n" + keyLine3 + "\n-----END CERTIFICATE-----",
			"-----BEGIN CERTIFICATE-----\n" + keyLine1 + "\n" + keyLine2 + "\n" + keyLine3 + "\n-----END CERTIFICATE-----"},
		{"certificate tail", "x\n" + keyLine1 + "\n" + keyLine2 + "\n" + keyLine3 + "\n" + keyLast + "\n-----END CERTIFICATE-----",
			"x\n" + keyLine1 + "\n" + keyLine2 + "\n" + keyLine3 + "\n" + keyLast + "\n-----END CERTIFICATE-----"},
		{"begin named in prose", "starts with -----BEGIN PRIVATE KEY----- and\nends with " + end + ".",
			"starts with -----BEGIN PRIVATE KEY----- and\nends with " + end + "."},
		{"begin in a test's string", `String("-----BEGIN EC PRIVATE KEY-----") failed`, `String("-----BEGIN EC PRIVATE KEY-----") failed`},
		{"begin with a header", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB12\n\n" + keyLine1, "[REDACTED:private-key]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestEncodedShapes(t *testing.T) {
	sc := New(Options{Values: []Value{{Name: "DB_PASS", Value: "Fz8-known-value-7"}}})
	tests := []struct{ name, in, want string }{
		{"percent", "t=" + strings.Replace(fakeGH, "_", "%5F", 1) + "&x=1", "t=[REDACTED:github-token]&x=1"},
		{"percent lower-case hex", strings.Replace(fakeGH, "_", "%5f", 1), "[REDACTED:github-token]"},
		{"percent twice", strings.Replace(fakeGH, "_", "%255F", 1), "[REDACTED:github-token]"},
		{"zero-width", "k " + fakeGH[:5] + "\u200b" + fakeGH[5:9] + "\u200d\u2060" + fakeGH[9:] + " z", "k [REDACTED:github-token] z"},
		{"bom and soft hyphen", fakeGH[:3] + "\ufeff" + fakeGH[3:10] + "\u00ad" + fakeGH[10:], "[REDACTED:github-token]"},
		{"unicode escape", strings.Replace(fakeGH, "_", `\u005f`, 1), "[REDACTED:github-token]"},
		{"unicode escape escaped again", `"k": "` + strings.Replace(fakeGH, "_", `\\u005f`, 1) + `"`, `"k": "[REDACTED:github-token]"`},
		{"hex escape", strings.Replace(fakeGH, "_", `\x5f`, 1), "[REDACTED:github-token]"},
		{"html decimal", strings.Replace(fakeGH, "_", "&#95;", 1), "[REDACTED:github-token]"},
		{"html hex", strings.Replace(fakeGH, "_", "&#x5F;", 1), "[REDACTED:github-token]"},
		{"html named", strings.Replace(fakeGH, "_", "&lowbar;", 1), "[REDACTED:github-token]"},
		{"weak name with encoded value", "api_key=Zq81\u200bKd02Lm93Xn84", "api_key=[REDACTED:assignment]"},
		{"known value encoded", "pw Fz8%2Dknown-value-7 end", "pw [REDACTED:env:DB_PASS] end"},
		{"encoded key", "-----BEGIN%20PRIVATE%20KEY-----%0A" + keyLine1 + "%0A-----END%20PRIVATE%20KEY-----&x=1", "[REDACTED:private-key]&x=1"},
		{"ordinary url encoding", "https://example.com/?q=hello%20world&lang=en", "https://example.com/?q=hello%20world&lang=en"},
		{"ordinary entities", "Tom &amp; Jerry &lt;3 &#8212; ok", "Tom &amp; Jerry &lt;3 &#8212; ok"},
		{"emoji joiner", "team 👩\u200d💻 shipped", "team 👩\u200d💻 shipped"},
		{"lone percent", "100% of 5%ZZ", "100% of 5%ZZ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestProseAfterSecretName(t *testing.T) {
	sc := New(Options{})
	tests := []struct{ name, in, want string }{
		{"meeting", "secret: the meeting moved to 3pm", "secret: the meeting moved to 3pm"},
		{"man page", "Run passwd: it changes your password…", "Run passwd: it changes your password…"},
		{"nsswitch", "passwd:         files systemd", "passwd:         files systemd"},
		{"rules", "Password: must contain at least 12 characters, one digit", "Password: must contain at least 12 characters, one digit"},
		{"cursor error", `invalid cursor "password": pass next_cursor exactly as returned, or omit it`, `invalid cursor "password": pass next_cursor exactly as returned, or omit it`},
		{"basic scheme in prose", "Authorization: Basic auth is not supported", "Authorization: Basic auth is not supported"},
		{"one word is a password", "password: letmein", "password: [REDACTED:assignment]"},
		{"a word and a credential", "password: hunter2 horse", "password: [REDACTED:assignment]"},
		{"mixed-case word", "secret: pAsSwOrD value", "secret: [REDACTED:assignment]"},
		{"quoted words stay a value", `password: "correct horse battery staple"`, `password: "[REDACTED:assignment]"`},
		{"quoted after equals", "export DB_PASSWORD='hunter two'", "export DB_PASSWORD='[REDACTED:assignment]'"},
		{"json value", `{"secret": "the meeting moved"}`, `{"secret": "[REDACTED:assignment]"}`},
		{"value ends at a closing quote", `err="x\n    X-Api-Key: 0123456789abcdef" retry=1s`, `err="x\n    X-Api-Key: [REDACTED:assignment]" retry=1s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestWriterKeyWithoutBegin(t *testing.T) {
	sc := New(Options{})
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"end line after held body lines", []string{"start\n" + keyLine1 + "\n", keyLine2 + "\n" + keyLast + "\n-----END PRIVATE KEY-----\nnext\n"},
			"start\n[REDACTED:private-key]\nnext\n"},
		{"body lines that end in text are passed on", []string{keyLine1 + "\n", "not a key\n"}, keyLine1 + "\nnot a key\n"},
		{"held lines flushed at the end", []string{keyLine1 + "\n"}, keyLine1 + "\n"},
		{"invisible characters in body lines", []string{keyLine1[:9] + "\u200b" + keyLine1[9:] + "\n", "-----END\u200b PRIVATE KEY-----\n"}, "[REDACTED:private-key]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeAll(t, sc.Writer(&buf), tt.chunks...)
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONKeyLinesAcrossStrings(t *testing.T) {
	sc := New(Options{})
	tests := []struct{ name, in, want string }{
		{"tail as an array", `{"tail":["boot ok","` + keyLine1 + `","` + keyLast + `","-----END PRIVATE KEY-----"],"n":1}`,
			`{"tail":["boot ok","[REDACTED:private-key]","[REDACTED:private-key]","[REDACTED:private-key]"],"n":1}`},
		{"whole key as an array", `["-----BEGIN PRIVATE KEY-----","` + keyLine1 + `","-----END PRIVATE KEY-----","after"]`,
			`["[REDACTED:private-key]","[REDACTED:private-key]","[REDACTED:private-key]","after"]`},
		// A run with no marker needs line breaks between the strings, as
		// indented JSON has; a compact array of bare body lines passes.
		{"body lines as an indented array", "{\"lines\": [\n  \"" + keyLine1 + "\",\n  \"" + keyLine2 + "\",\n  \"" + keyLine3 + "\"\n]}",
			"{\"lines\": [\n  \"[REDACTED:private-key]\",\n  \"[REDACTED:private-key]\",\n  \"[REDACTED:private-key]\"\n]}"},
		{"one base64 string", `{"digest":"` + keyLine1 + `"}`, `{"digest":"` + keyLine1 + `"}`},
		{"key cut at its end in an array", `{"lines":["ok","-----BEGIN PRIVATE KEY-----","` + keyLine2 + `"],"type":"text","more":["text"]}`,
			`{"lines":["ok","[REDACTED:private-key]","[REDACTED:private-key]"],"type":"text","more":["text"]}`},
		{"certificate lines", `["-----BEGIN CERTIFICATE-----","` + keyLine1 + `","-----END CERTIFICATE-----"]`,
			`["-----BEGIN CERTIFICATE-----","` + keyLine1 + `","-----END CERTIFICATE-----"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(sc.JSON([]byte(tt.in)))); diff != "" {
				t.Errorf("JSON(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// A key cut at its end in one content block runs, as text, to the end of
// the result; the blocks after it must keep their type.
func TestResultKeyCutAtEnd(t *testing.T) {
	sc := New(Options{})
	in := &toolcall.Result{Content: []json.RawMessage{
		json.RawMessage(`{"type":"text","text":"-----BEGIN PRIVATE KEY-----\n` + keyLine1 + `"}`),
		json.RawMessage(`{"text":"-----BEGIN PRIVATE KEY-----\n` + keyLine1 + `","type":"text","_meta":{"note":"text"}}`),
	}}
	got := sc.Result(in)
	want := []string{`{"type":"text","text":"[REDACTED:private-key]"}`, `{"text":"[REDACTED:private-key]","type":"text","_meta":{"note":"text"}}`}
	for i, c := range got.Content {
		if diff := cmp.Diff(want[i], string(c)); diff != "" {
			t.Errorf("block %d (-want +got):\n%s", i, diff)
		}
	}
}
