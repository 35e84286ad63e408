//go:build !linux || purego

package fileio

import (
	"log/slog"
	"sync"

	"github.com/spindle-rt/spindle/internal/loop"
)

var noRingOnce sync.Once

// ringEngineOf returns nil: this build has no io_uring. Config.Engine
// asking for it is said once.
func ringEngineOf(_ *loop.Loop, cfg Config) engine {
	if cfg.Engine == EngineURing {
		noRingOnce.Do(func() {
			slog.Warn("fileio: io_uring was asked for, and this build has none (-tags purego, or not Linux); the worker pool serves the files")
		})
	}
	return nil
}
