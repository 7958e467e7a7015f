package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// propagator is W3C trace context: traceparent and tracestate.
var propagator = propagation.TraceContext{}

// tracesWanted reads the standard variables: traces are on when
// OTEL_TRACES_EXPORTER is otlp, or unset while an OTLP endpoint is set;
// OTEL_SDK_DISABLED=true turns them off.
func tracesWanted(getenv func(string) string) (bool, error) {
	return signalWanted(getenv, "TRACES", "traces")
}

// signalWanted reads OTEL_<SIGNAL>_EXPORTER and the OTLP endpoint and
// protocol variables (general and per signal) for one signal; what names
// the signal in errors.
func signalWanted(getenv func(string) string, signal, what string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	key := "OTEL_" + signal + "_EXPORTER"
	exp := strings.ToLower(strings.TrimSpace(getenv(key)))
	switch exp {
	case "none":
		return false, nil
	case "otlp":
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") == "" {
			return false, nil
		}
	default:
		return false, fmt.Errorf("%s=%q: kiln exports %s only over OTLP; set it to otlp or none", key, exp, what)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: kiln sends OTLP over http/protobuf only; set it to http/protobuf (a collector's OTLP/HTTP receiver listens on :4318)", proto)
	}
	return true, nil
}

// startTracing builds a tracer provider exporting over OTLP/HTTP as the
// OTEL_* variables say, or returns a nil provider when they ask for none.
func startTracing(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	on, err := tracesWanted(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	// The exporter reads OTEL_EXPORTER_OTLP_{,TRACES_}{ENDPOINT,HEADERS,
	// TIMEOUT,...} itself; the batcher OTEL_BSP_*; the provider
	// OTEL_TRACES_SAMPLER.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("kiln"), semconv.ServiceVersion(version)),
		resource.Environment(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// remoteParent returns ctx carrying the span context named by a W3C
// traceparent (and tracestate), when it is valid.
func remoteParent(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return propagator.Extract(ctx, c)
}

// injected returns the W3C fields for the span in ctx, or nil when there is
// none.
func injected(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c
}
