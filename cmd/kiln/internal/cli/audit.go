package cli

import (
	"context"
	"log/slog"

	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/telemetry"
)

// openAudit opens the one audit log of this kiln: the file
// gateway.audit asks for, OpenTelemetry log records when OTEL_* turns them
// on, and the console's live log when the console is on (feed); nil (a
// no-op log) when none of them is wanted.
func openAudit(cfg *config.Config, tel *telemetry.Telemetry, feed *consoleFeed, replica string, log *slog.Logger) (*audit.Log, error) {
	a := cfg.Gateway.Audit
	var sinks []audit.Sink
	if emit := tel.AuditEmitter(); emit != nil {
		sinks = append(sinks, audit.Sink{Emit: emit, Values: a.Values})
	}
	if feed != nil {
		sinks = append(sinks, audit.Sink{Emit: feed.publish, Values: cfg.Gateway.Console.ShowValues})
	}
	if a.Path == "" && len(sinks) == 0 {
		return nil, nil
	}
	return audit.Open(audit.Options{Path: a.Path, MaxSize: a.MaxSize, Keep: a.Keep, Values: a.Values,
		FlushEvery: a.Flush, Replica: replica, Sinks: sinks, Logger: log})
}

// auditScope reads a call's session, profile and tier for its audit line.
func auditScope(ctx context.Context) (session, profile, tier string) {
	session = server.SessionID(ctx)
	if p := policy.ProfileFrom(ctx); p != nil {
		profile = p.Name
	}
	return session, profile, telemetry.TierOf(ctx)
}
