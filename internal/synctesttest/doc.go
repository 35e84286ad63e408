// Package synctesttest runs spindle inside testing/synctest bubbles
// (Go 1.25 and later; the tests carry a go1.25 build constraint, the
// library keeps go 1.24): several bubbles and ordinary tests in one test
// binary, timers, Sleep, Timeout, Group, Do and Close on fake time, and a
// forgotten promise that synctest reports as a deadlock. It has no code of
// its own.
package synctesttest
