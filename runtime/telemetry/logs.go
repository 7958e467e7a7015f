package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kilnmcp/kiln/runtime/audit"
)

// logsWanted is tracesWanted for log records (OTEL_LOGS_EXPORTER): kiln's
// log records are its audit records.
func logsWanted(getenv func(string) string) (bool, error) {
	return signalWanted(getenv, "LOGS", "log records")
}

// startLogs builds a logger provider exporting over OTLP/HTTP as the
// OTEL_* variables say, or returns nil when they ask for none.
func startLogs(ctx context.Context, version string) (*sdklog.LoggerProvider, error) {
	on, err := logsWanted(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	// The exporter reads OTEL_EXPORTER_OTLP_{,LOGS_}{ENDPOINT,HEADERS,
	// TIMEOUT,...}; the batcher OTEL_BLRP_*.
	exp, err := otlploghttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP log exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("kiln"), semconv.ServiceVersion(version)),
		resource.Environment(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)), sdklog.WithResource(res)), nil
}

// AuditEmitter returns what sends each audit record as an OpenTelemetry
// log record (an audit.Sink's Emit), or nil when log records are off.
func (t *Telemetry) AuditEmitter() func(audit.Record) {
	if t.lp == nil {
		return nil
	}
	logger := t.lp.Logger("github.com/kilnmcp/kiln/audit")
	return func(r audit.Record) { logger.Emit(context.Background(), auditLogRecord(r)) }
}

// auditLogRecord is r as a log record: the event as its body and event
// name, every set field as a kiln.audit.* attribute.
func auditLogRecord(r audit.Record) otellog.Record {
	var lr otellog.Record
	lr.SetTimestamp(r.Time)
	lr.SetObservedTimestamp(time.Now())
	lr.SetEventName("kiln.audit." + r.Event)
	lr.SetSeverity(otellog.SeverityInfo)
	switch r.Outcome {
	case "", audit.OutcomeOK:
	case audit.OutcomeDenied, audit.OutcomeRateLimited:
		lr.SetSeverity(otellog.SeverityWarn)
	default:
		lr.SetSeverity(otellog.SeverityError)
	}
	body := r.Event
	if r.Tool != "" {
		body += " " + r.Tool
	}
	if r.Outcome != "" {
		body += " " + r.Outcome
	}
	lr.SetBody(attribute.StringValue(body))
	add := func(k, v string) {
		if v != "" {
			lr.AddAttributes(attribute.String("kiln.audit."+k, v))
		}
	}
	add("event", r.Event)
	add("replica", r.Replica)
	add("identity", r.Identity)
	add("session", r.Session)
	add("profile", r.Profile)
	add("tool", r.Tool)
	add("backend", r.Backend)
	add("tier", r.Tier)
	add("args_sha256", r.ArgsSHA256)
	add("args", string(r.Args))
	add("outcome", r.Outcome)
	add("code", r.Code)
	add("detail", r.Detail)
	if r.Event == audit.EventCall {
		lr.AddAttributes(attribute.Float64("kiln.audit.duration_ms", r.DurationMS), attribute.Int("kiln.audit.result_bytes", r.ResultBytes))
	}
	return lr
}
