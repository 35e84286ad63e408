// Package cputime reads the CPU time the process has used, for the bundled
// benchmarks (package main of bench) and for bench/peers, which report
// cpu-ns per unit of work where wall time says too little.
package cputime
