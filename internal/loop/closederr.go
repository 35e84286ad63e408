package loop

import "errors"

// ErrChanClosed is channel.ErrClosed, declared here so that ErrClosed can
// match it: a channel of an executor that has closed is closed too.
var ErrChanClosed = errors.New("channel: closed")

// closedError is the type of ErrClosed.
type closedError struct{}

func (closedError) Error() string { return "executor: closed" }

// Is makes errors.Is(ErrClosed, channel.ErrClosed) true: code that stops
// on a closed channel stops when the executor closes too. The converse does
// not hold: a closed channel says nothing about its executor.
func (closedError) Is(target error) bool { return target == ErrChanClosed }
