package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"reflect"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// watchConfig polls the config file and applies each valid edit. Polling
// (stat, then read on a change) survives editors that replace the file
// instead of writing it, which file-watch APIs report unevenly. An invalid
// edit is logged with every problem and the running config stays.
func watchConfig(ctx context.Context, cur *config.Config, every time.Duration, log *slog.Logger, apply func(*config.Config)) {
	path := cur.Path
	last, _ := os.ReadFile(path)
	var lastMod time.Time
	if fi, err := os.Stat(path); err == nil {
		lastMod = fi.ModTime()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil || fi.ModTime().Equal(lastMod) {
			continue
		}
		lastMod = fi.ModTime()
		data, err := os.ReadFile(path)
		if err != nil || bytes.Equal(data, last) {
			continue
		}
		last = data
		next, err := config.Load(path)
		if err != nil {
			log.Error("config edit rejected; kiln keeps running with the previous config", "config", path, "problems", err.Error())
			continue
		}
		for _, section := range restartOnly(cur, next) {
			log.Warn("this config change takes effect when kiln restarts", "key", section)
		}
		apply(next)
		cur = next
	}
}

// restartOnly lists the gateway settings that differ between a and b but
// are read once at start-up.
func restartOnly(a, b *config.Config) []string {
	var out []string
	ga, gb := a.Gateway, b.Gateway
	for _, f := range []struct {
		key  string
		a, b any
	}{
		{"gateway.name", ga.Name, gb.Name},
		{"gateway.state_dir", ga.StateDir, gb.StateDir},
		{"gateway.state_url", ga.StateURL, gb.StateURL},
		{"gateway.registration.persist", ga.Registration.Persist, gb.Registration.Persist},
		{"gateway.max_output_size", ga.MaxOutputSize, gb.MaxOutputSize},
		{"gateway.log_level", ga.LogLevel, gb.LogLevel},
		{"gateway.sandbox", ga.Sandbox, gb.Sandbox},
		{"gateway.output", ga.Output, gb.Output},
		{"gateway.http", ga.HTTP, gb.HTTP},
		{"gateway.semantic", ga.Semantic, gb.Semantic},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			out = append(out, f.key)
		}
	}
	return out
}
