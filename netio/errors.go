package netio

import "errors"

// ErrOutputLimit fails a connection whose peer stopped reading while its
// output grew past the output limit (Conn.SetOutputLimit says exactly
// when): the Write that would cross it returns ErrOutputLimit and writes
// nothing, the connection is closed at once
// (unsent output is dropped), and its pending and later receives, writes
// and flushes fail with ErrOutputLimit. A peer that never reads costs its
// own connection only.
var ErrOutputLimit = errors.New("netio: connection output limit exceeded")
