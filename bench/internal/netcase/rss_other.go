//go:build !linux

package netcase

// rss: not known here.
func rss() (int64, bool) { return 0, false }

// ioCalls: not known here.
func ioCalls() (reads, writes int64, ok bool) { return 0, 0, false }
