module github.com/spindle-rt/spindle/examples/redis/lincheck

go 1.24

require github.com/anishathalye/porcupine v1.3.1

require go.uber.org/goleak v1.3.0
