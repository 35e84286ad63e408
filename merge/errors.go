package merge

import "github.com/spindle-rt/spindle/channel"

// ErrClosed is channel.ErrClosed: the error of PollRecv, Recv and RecvWait
// once the merge has ended. A substream whose PollRecv returns an error
// matching it (by errors.Is) has ended normally and is dropped quietly.
var ErrClosed = channel.ErrClosed
