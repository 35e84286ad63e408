module github.com/spindle-rt/spindle/examples/webkv/twin

go 1.24.0

require (
	github.com/gorilla/websocket v1.5.3
	github.com/spindle-rt/spindle v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

replace github.com/spindle-rt/spindle => ../../..
