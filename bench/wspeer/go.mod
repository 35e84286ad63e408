module github.com/spindle-rt/spindle/bench/wspeer

go 1.24.0

require github.com/gorilla/websocket v1.5.3
