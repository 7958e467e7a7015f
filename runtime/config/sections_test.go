package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// allOn is the Output a config without gateway.output gets.
var allOn = Output{IntentFilter: true, AutoChunkJSON: true, SmartTruncation: true, SizeFooter: true}

// on returns allOn changed by f.
func on(f func(*Output)) Output {
	o := allOn
	f(&o)
	return o
}

// expectSections loads text with vars and compares the gateway's sandbox
// and output settings.
func expectSections(t *testing.T, text string, vars map[string]string, dotenv string, wantS Sandbox, wantO Output) {
	t.Helper()
	c, err := loadYAML(t, text, vars, dotenv)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if diff := cmp.Diff(wantS, c.Gateway.Sandbox); diff != "" {
		t.Errorf("sandbox (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantO, c.Gateway.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestSectionKeys(t *testing.T) {
	const sb, out = "version: 1\ngateway:\n  sandbox:\n    ", "version: 1\ngateway:\n  output:\n    "
	tests := []struct {
		name  string
		yaml  string
		vars  map[string]string
		wantS Sandbox
		wantO Output
	}{
		{"timeout", sb + "timeout: 10s\n", nil, Sandbox{Timeout: 10 * time.Second}, allOn},
		{"max_timeout", sb + "max_timeout: 1h\n", nil, Sandbox{MaxTimeout: time.Hour}, allOn},
		{"timeout equal to max", sb + "timeout: 1m\n    max_timeout: 60s\n", nil,
			Sandbox{Timeout: time.Minute, MaxTimeout: time.Minute}, allOn},
		{"memory in bytes", sb + "memory: 8388608\n", nil, Sandbox{MemoryBytes: 8 << 20}, allOn},
		{"memory in MiB", sb + "memory: 50MiB\n", nil, Sandbox{MemoryBytes: 50 << 20}, allOn},
		{"memory in GB with a space", sb + "memory: 1.5 GB\n", nil, Sandbox{MemoryBytes: 1_500_000_000}, allOn},
		{"memory unit in lower case", sb + "memory: 64mib\n", nil, Sandbox{MemoryBytes: 64 << 20}, allOn},
		{"max_calls", sb + "max_calls: 3\n", nil, Sandbox{MaxCalls: 3}, allOn},
		{"max_concurrent", sb + "max_concurrent: 2\n", nil, Sandbox{MaxConcurrent: 2}, allOn},
		{"queue_wait", sb + "queue_wait: 250ms\n", nil, Sandbox{QueueWait: 250 * time.Millisecond}, allOn},
		{"intent_filter", out + "intent_filter: false\n", nil, Sandbox{}, on(func(o *Output) { o.IntentFilter = false })},
		{"auto_chunk_json", out + "auto_chunk_json: false\n", nil, Sandbox{}, on(func(o *Output) { o.AutoChunkJSON = false })},
		{"smart_truncation", out + "smart_truncation: false\n", nil, Sandbox{}, on(func(o *Output) { o.SmartTruncation = false })},
		{"size_footer", out + "size_footer: FALSE\n", nil, Sandbox{}, on(func(o *Output) { o.SizeFooter = false })},
		{"explicit true", out + "size_footer: true\n", nil, Sandbox{}, allOn},
		{"intent_threshold", out + "intent_threshold: 100\n", nil, Sandbox{}, on(func(o *Output) { o.IntentThreshold = 100 })},
		{"chunk_threshold", out + "chunk_threshold: 200\n", nil, Sandbox{}, on(func(o *Output) { o.ChunkThreshold = 200 })},
		{"truncate_at", out + "truncate_at: 300\n", nil, Sandbox{}, on(func(o *Output) { o.TruncateAt = 300 })},
		{
			"variables", `
version: 1
gateway:
  sandbox:
    memory: ${MEM}
    queue_wait: ${WAIT:-1s}
    max_calls: "${CALLS}"
  output:
    size_footer: ${FOOTER:-true}
    truncate_at: ${TRUNC:-1000}
`, map[string]string{"MEM": "8MiB", "CALLS": "7", "FOOTER": "false"},
			Sandbox{MemoryBytes: 8 << 20, MaxCalls: 7, QueueWait: time.Second},
			on(func(o *Output) { o.SizeFooter, o.TruncateAt = false, 1000 }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectSections(t, tt.yaml, tt.vars, "", tt.wantS, tt.wantO)
		})
	}
}

func TestSectionDefaults(t *testing.T) {
	tests := []struct{ name, yaml string }{
		{"no gateway", "version: 1\n"},
		{"empty gateway", "version: 1\ngateway:\n"},
		{"other gateway keys only", "version: 1\ngateway: {name: k, log_level: warn}\n"},
		{"empty sections", "version: 1\ngateway:\n  sandbox:\n  output:\n"},
		{"empty mappings", "version: 1\ngateway: {sandbox: {}, output: {}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectSections(t, tt.yaml, nil, "", Sandbox{}, allOn)
		})
	}
	if diff := cmp.Diff(allOn, DefaultGateway().Output); diff != "" {
		t.Errorf("DefaultGateway().Output (-want +got):\n%s", diff)
	}
	// Each flag defaults on by itself, not only when the section is absent.
	for _, k := range []string{"intent_filter", "auto_chunk_json", "smart_truncation", "size_footer"} {
		t.Run("only "+k+" set", func(t *testing.T) {
			c := mustLoad(t, "version: 1\ngateway:\n  output:\n    "+k+": false\n", nil)
			got := []bool{c.Gateway.Output.IntentFilter, c.Gateway.Output.AutoChunkJSON,
				c.Gateway.Output.SmartTruncation, c.Gateway.Output.SizeFooter}
			off := 0
			for _, b := range got {
				if !b {
					off++
				}
			}
			if off != 1 {
				t.Errorf("flags = %v, want exactly one off", got)
			}
		})
	}
}

func TestSectionProblems(t *testing.T) {
	const sb, out = "version: 1\ngateway:\n  sandbox:\n    ", "version: 1\ngateway:\n  output:\n    "
	const units = "use bytes or a number with B, KB, KiB, MB, MiB, GB or GiB"
	tests := []struct {
		name string
		yaml string
		vars map[string]string
		want []string
	}{
		{"bad memory", sb + "memory: 50 potatoes\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: invalid size "50 potatoes"; ` + units}},
		{"memory with docker suffix", sb + "memory: 512m\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: invalid size "512m"; ` + units + ` (did you mean 512MiB?)`}},
		{"negative memory", sb + "memory: -5MiB\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: invalid size "-5MiB"; ` + units}},
		{"zero memory", sb + "memory: 0KiB\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: must be positive, got "0KiB"; use e.g. 50MiB`}},
		{"fractional bytes", sb + "memory: 0.3KiB\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: size "0.3KiB" is not a whole number of bytes; write 307 (bytes) or use a larger unit`}},
		{"huge memory", sb + "memory: 9000000000GiB\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: size "9000000000GiB" is too large; use e.g. 50MiB`}},
		{"memory from unset variable", sb + "memory: ${MEM}\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: invalid size "${MEM}"; ` + units + ` (unset: ${MEM})`}},
		{"timeout without unit", sb + "timeout: 30\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.timeout: "30" has no unit; write 30s (or ms, m, h)`}},
		{"zero timeout", sb + "timeout: 0s\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.timeout: must be positive, got "0s"; use e.g. 30s`}},
		{"bad max_timeout", sb + "max_timeout: forever\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.max_timeout: invalid duration "forever"; use Go syntax such as 30s, 1m30s or 500ms`}},
		{"max_timeout below timeout", sb + "timeout: 1m\n    max_timeout: 10s\n", nil, []string{
			`kiln.yaml:5: gateway.sandbox.max_timeout: "10s" is shorter than gateway.sandbox.timeout (1m0s); raise max_timeout to at least 1m0s or lower timeout`}},
		{"zero max_calls", sb + "max_calls: 0\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.max_calls: want a positive whole number such as 50, got "0"`}},
		{"fractional max_concurrent", sb + "max_concurrent: 2.5\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.max_concurrent: want a positive whole number such as 8, got "2.5"`}},
		{"negative queue_wait", sb + "queue_wait: -1s\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.queue_wait: must be positive, got "-1s"; use e.g. 30s`}},
		{"zero queue_wait", sb + "queue_wait: 0s\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.queue_wait: must be positive, got "0s"; use e.g. 30s`}},
		{"queue_wait without unit", sb + "queue_wait: 2\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.queue_wait: "2" has no unit; write 2s (or ms, m, h)`}},
		{"flag yes", out + "intent_filter: yes\n", nil, []string{
			`kiln.yaml:4: gateway.output.intent_filter: want true or false, got "yes"`}},
		{"flag number", out + "auto_chunk_json: 1\n", nil, []string{
			`kiln.yaml:4: gateway.output.auto_chunk_json: want true or false, got "1"`}},
		{"flag word", out + "smart_truncation: off\n", nil, []string{
			`kiln.yaml:4: gateway.output.smart_truncation: want true or false, got "off"`}},
		{"flag empty", out + "size_footer: \"\"\n", nil, []string{
			`kiln.yaml:4: gateway.output.size_footer: want true or false, got ""`}},
		{"threshold with unit", out + "intent_threshold: 5KB\n", nil, []string{
			`kiln.yaml:4: gateway.output.intent_threshold: want a positive whole number such as 5000, got "5KB"`}},
		{"negative threshold", out + "chunk_threshold: -1\n", nil, []string{
			`kiln.yaml:4: gateway.output.chunk_threshold: want a positive whole number such as 10240, got "-1"`}},
		{"zero truncate_at", out + "truncate_at: 0\n", nil, []string{
			`kiln.yaml:4: gateway.output.truncate_at: want a positive whole number such as 40000, got "0"`}},
		{"unknown keys", `
version: 1
gateway:
  sandbox:
    memroy: 1MiB
    memory_limit: 1MiB
    colour: blue
  output:
    intent_treshold: 5
    footer: false
`, nil, []string{
			`kiln.yaml:5: gateway.sandbox.memroy: unknown key; did you mean "memory"?`,
			`kiln.yaml:6: gateway.sandbox.memory_limit: unknown key; did you mean "memory"?`,
			"kiln.yaml:7: gateway.sandbox.colour: unknown key; the keys here are timeout, max_timeout, memory, max_calls, max_concurrent or queue_wait",
			`kiln.yaml:9: gateway.output.intent_treshold: unknown key; did you mean "intent_threshold"?`,
			"kiln.yaml:10: gateway.output.footer: unknown key; the keys here are intent_filter, auto_chunk_json, smart_truncation, size_footer, intent_threshold, chunk_threshold or truncate_at",
		}},
		{"shapes", `
version: 1
gateway:
  sandbox: 5
  output:
    size_footer: [true]
    truncate_at:
`, nil, []string{
			"kiln.yaml:4: gateway.sandbox: is a single value; want a mapping of settings",
			"kiln.yaml:6: gateway.output.size_footer: is a list; want a single value",
			`kiln.yaml:7: gateway.output.truncate_at: empty value; give a value (quote an empty string as "") or remove the key`,
		}},
		{"duplicates", "version: 1\ngateway:\n  sandbox: {}\n  sandbox: {}\n  output: {truncate_at: 1000, truncate_at: 2000}\n", nil, []string{
			"kiln.yaml:4: gateway.sandbox: set twice (first at line 3); remove or rename one",
			"kiln.yaml:5: gateway.output.truncate_at: set twice (first at line 5); remove or rename one",
		}},
		{"overrides name the variable", "version: 1\n", map[string]string{
			"KILN_GATEWAY_SANDBOX_MEMORY":       "lots",
			"KILN_GATEWAY_OUTPUT_INTENT_FILTER": "maybe",
		}, []string{
			`kiln.yaml: gateway.sandbox.memory (from KILN_GATEWAY_SANDBOX_MEMORY): invalid size "lots"; ` + units,
			`kiln.yaml: gateway.output.intent_filter (from KILN_GATEWAY_OUTPUT_INTENT_FILTER): want true or false, got "maybe"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, tt.yaml, tt.vars, tt.want)
		})
	}
}

func TestSectionOverrides(t *testing.T) {
	const text = `
version: 1
gateway:
  sandbox:
    timeout: 30s
    max_calls: 9
  output:
    intent_filter: false
`
	fileS := Sandbox{Timeout: 30 * time.Second, MaxCalls: 9}
	fileO := on(func(o *Output) { o.IntentFilter = false })
	tests := []struct {
		name   string
		vars   map[string]string
		dotenv string
		wantS  Sandbox
		wantO  Output
	}{
		{"none", nil, "", fileS, fileO},
		{
			"sandbox timeout and output footer",
			map[string]string{"KILN_GATEWAY_SANDBOX_TIMEOUT": "10s", "KILN_GATEWAY_OUTPUT_SIZE_FOOTER": "false"}, "",
			Sandbox{Timeout: 10 * time.Second, MaxCalls: 9},
			on(func(o *Output) { o.IntentFilter, o.SizeFooter = false, false }),
		},
		{
			"keys the file leaves out, with variables",
			map[string]string{"KILN_GATEWAY_SANDBOX_MEMORY": "${MEM}", "MEM": "1GiB", "KILN_GATEWAY_OUTPUT_TRUNCATE_AT": "123"}, "",
			Sandbox{Timeout: 30 * time.Second, MaxCalls: 9, MemoryBytes: 1 << 30},
			on(func(o *Output) { o.IntentFilter, o.TruncateAt = false, 123 }),
		},
		{
			"from .env, empty ignored",
			map[string]string{"KILN_GATEWAY_SANDBOX_MAX_CALLS": ""},
			"KILN_GATEWAY_OUTPUT_INTENT_FILTER=true\nKILN_GATEWAY_SANDBOX_QUEUE_WAIT=3s\n",
			Sandbox{Timeout: 30 * time.Second, MaxCalls: 9, QueueWait: 3 * time.Second}, allOn,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectSections(t, text, tt.vars, tt.dotenv, tt.wantS, tt.wantO)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  error
	}{
		{"1", 1, nil},
		{" 42 ", 42, nil},
		{"7B", 7, nil},
		{"2KB", 2000, nil},
		{"2KiB", 2048, nil},
		{"3MB", 3_000_000, nil},
		{"3MiB", 3 << 20, nil},
		{"4GB", 4_000_000_000, nil},
		{"4GiB", 4 << 30, nil},
		{"4 gib", 4 << 30, nil},
		{"0.5KiB", 512, nil},
		{"9223372036854775807", math.MaxInt64, nil},
		{"9223372036854775808", 0, errSizeRange},
		{"0", 0, errSizeZero},
		{"0.0001B", 0, errSizeZero},
		{"1.5", 0, fractionError{floor: 1}},
		{"", 0, errSizeSyntax},
		{"MiB", 0, errSizeSyntax},
		{"5TiB", 0, errSizeSyntax},
		{"5 M", 0, errSizeSyntax},
		{"1e6", 0, errSizeSyntax},
		{"0x10", 0, errSizeSyntax},
		{"-1", 0, errSizeSyntax},
		{".5KiB", 0, errSizeSyntax},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("parseSize(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestSchemaAcceptsSectionValues checks the other direction of the schema
// tests: forms the loader accepts, the schema accepts too.
func TestSchemaAcceptsSectionValues(t *testing.T) {
	sch := compileSchema(t)
	values := []struct{ key, val string }{
		{"sandbox.memory", "8388608"},
		{"sandbox.memory", `"8388608"`},
		{"sandbox.memory", "1.5 GB"},
		{"sandbox.memory", "${MEM:-50MiB}"},
		{"sandbox.max_calls", `"3"`},
		{"output.size_footer", "false"},
		{"output.size_footer", `"true"`},
	}
	// Every unit, at a count within sandbox.memory's bounds (4MiB to 4GiB).
	counts := map[string]string{"B": "8388608", "KB": "8000", "KiB": "8192", "MB": "8", "MiB": "8", "GB": "2", "GiB": "2"}
	for _, u := range sizeUnitNames {
		values = append(values, struct{ key, val string }{"sandbox.memory", counts[u] + u})
	}
	for _, v := range values {
		section, key, _ := strings.Cut(v.key, ".")
		text := "version: 1\ngateway:\n  " + section + ":\n    " + key + ": " + v.val + "\n"
		t.Run(v.key+"="+strconv.Quote(v.val), func(t *testing.T) {
			if _, err := loadYAML(t, text, map[string]string{"MEM": "8MiB"}, ""); err != nil {
				t.Errorf("loader: %v", err)
			}
			if err := sch.Validate(yamlInstance(t, []byte(text))); err != nil {
				t.Errorf("schema: %v", err)
			}
		})
	}
}
