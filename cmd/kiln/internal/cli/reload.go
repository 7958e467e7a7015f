package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
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
		for _, section := range config.RestartOnly(cur.Gateway, next.Gateway) {
			log.Warn("this config change takes effect when kiln restarts", "key", section)
		}
		apply(next)
		cur = next
	}
}
