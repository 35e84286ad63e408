module github.com/spindle-rt/spindle

go 1.24.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.19.0
	golang.org/x/sys v0.41.0
)
