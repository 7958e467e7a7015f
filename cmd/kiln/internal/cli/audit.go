package cli

import (
	"context"
	"log/slog"
	"os"

	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/telemetry"
)

// openAudit opens the audit log gateway.audit asks for, feeding
// OpenTelemetry log records too when OTEL_* turns them on; nil (a no-op
// log) when neither is wanted.
func openAudit(cfg *config.Config, tel *telemetry.Telemetry, log *slog.Logger) (*audit.Log, error) {
	replica, _ := os.Hostname() // a pod's name in Kubernetes
	a := cfg.Gateway.Audit
	emit := tel.AuditEmitter()
	if a.Path == "" && emit == nil {
		return nil, nil
	}
	return audit.Open(audit.Options{Path: a.Path, MaxSize: a.MaxSize, Keep: a.Keep, Values: a.Values,
		FlushEvery: a.Flush, Replica: replica, Emit: emit, Logger: log})
}

// auditScope reads a call's session, profile and tier for its audit line.
func auditScope(ctx context.Context) (session, profile, tier string) {
	session = server.SessionID(ctx)
	if p := policy.ProfileFrom(ctx); p != nil {
		profile = p.Name
	}
	return session, profile, telemetry.TierOf(ctx)
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
