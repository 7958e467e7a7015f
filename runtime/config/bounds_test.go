package config

import (
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	const gw = "version: 1\ngateway:\n"
	const be = "version: 1\nbackends:\n  a:\n    command: x\n"
	tests := []struct {
		name string
		yaml string
		vars map[string]string
		want []string
	}{
		{"health interval too short", gw + "  health:\n    interval: 1ms\n", nil, []string{
			`kiln.yaml:4: gateway.health.interval: "1ms" is too short; use 1s to 24h`}},
		{"health interval too long", gw + "  health:\n    interval: 48h\n", nil, []string{
			`kiln.yaml:4: gateway.health.interval: "48h" is too long; use 1s to 24h`}},
		{"health timeout too short", gw + "  health:\n    timeout: 1ns\n", nil, []string{
			`kiln.yaml:4: gateway.health.timeout: "1ns" is too short; use 100ms to 1h`}},
		{"health failures too many", gw + "  health:\n    failures: 1000\n", nil, []string{
			`kiln.yaml:4: gateway.health.failures: "1000" is too large; use 1 to 100`}},
		{"health failures zero", gw + "  health:\n    failures: 0\n", nil, []string{
			`kiln.yaml:4: gateway.health.failures: want a positive whole number such as 3, got "0"`}},
		{"call timeout", gw + "  call_timeout: 1us\n", nil, []string{
			`kiln.yaml:3: gateway.call_timeout: "1us" is too short; use 100ms to 24h`}},
		{"connect timeout", gw + "  connect_timeout: 10ms\n", nil, []string{
			`kiln.yaml:3: gateway.connect_timeout: "10ms" is too short; use 1s to 1h`}},
		{"max output size", gw + "  max_output_size: 10\n", nil, []string{
			`kiln.yaml:3: gateway.max_output_size: "10" is too small; use 1,000 to 50,000,000`}},
		{"sandbox timeout", gw + "  sandbox:\n    timeout: 1ms\n    max_timeout: 2h\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.timeout: "1ms" is too short; use 100ms to 1h`,
			`kiln.yaml:5: gateway.sandbox.max_timeout: "2h" is too long; use 100ms to 1h`}},
		{"sandbox memory", gw + "  sandbox:\n    memory: 1KiB\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.memory: "1KiB" is too small; use 4MiB to 4GiB`}},
		{"sandbox memory from a variable", gw + "  sandbox:\n    memory: ${MEM}\n", map[string]string{"MEM": "64GiB"}, []string{
			`kiln.yaml:4: gateway.sandbox.memory: "${MEM}" (64GiB) is too large; use 4MiB to 4GiB`}},
		{"sandbox queue wait", gw + "  sandbox:\n    queue_wait: 1ns\n    max_concurrent: 100000\n", nil, []string{
			`kiln.yaml:4: gateway.sandbox.queue_wait: "1ns" is too short; use 10ms to 10m`,
			`kiln.yaml:5: gateway.sandbox.max_concurrent: "100000" is too large; use 1 to 1,024`}},
		{"http max body", gw + "  http:\n    max_body: 10B\n", nil, []string{
			`kiln.yaml:4: gateway.http.max_body: "10B" is too small; use 1KiB to 1GiB`}},
		{"output threshold", gw + "  output:\n    truncate_at: 5\n", nil, []string{
			`kiln.yaml:4: gateway.output.truncate_at: "5" is too small; use 100 to 50,000,000`}},
		{"backend timeout and queue wait", be + "    timeout: 1ms\n    queue_wait: 1h\n", nil, []string{
			`kiln.yaml:5: backends.a.timeout: "1ms" is too short; use 100ms to 24h`,
			`kiln.yaml:6: backends.a.queue_wait: "1h" is too long; use 10ms to 10m`}},
		{"override out of range", "version: 1\n", map[string]string{"KILN_GATEWAY_HEALTH_INTERVAL": "5ms"}, []string{
			`kiln.yaml: gateway.health.interval (from KILN_GATEWAY_HEALTH_INTERVAL): "5ms" is too short; use 1s to 24h`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, tt.yaml, tt.vars, tt.want)
		})
	}
}

// TestBoundsInclusive loads every bound's edges: the ends of a range are
// allowed.
func TestBoundsInclusive(t *testing.T) {
	c := mustLoad(t, `
version: 1
gateway:
  health: {interval: 1s, timeout: 100ms, failures: 100}
  sandbox: {memory: 4MiB, timeout: 1h, max_timeout: 1h}
  max_output_size: 1000
backends:
  a: {command: x, timeout: 24h, queue_wait: 10ms}
`, nil)
	b, _ := c.Backend("a")
	h := c.Gateway.Health
	if h.Interval != time.Second || h.Timeout != 100*time.Millisecond || h.Failures != 100 ||
		c.Gateway.Sandbox.MemoryBytes != 4<<20 || c.Gateway.MaxOutputSize != 1000 ||
		b.Timeout != 24*time.Hour || b.QueueWait != 10*time.Millisecond {
		t.Errorf("edges not kept: health %+v, sandbox %+v, max_output_size %d, backend timeout %s queue_wait %s",
			h, c.Gateway.Sandbox, c.Gateway.MaxOutputSize, b.Timeout, b.QueueWait)
	}
}
