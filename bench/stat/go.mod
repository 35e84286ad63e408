module github.com/spindle-rt/spindle/bench/stat

go 1.24.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/perf v0.0.0-20250813145418-2f7363a06fe1
)

require github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect

tool golang.org/x/perf/cmd/benchstat
