// Package testkit holds the project's test kits, apart from the loop's
// machinery and the leaves: spindletest (helpers that drive executors in
// tests), hooktest (a recorder of hook events), simtest (what the
// simulation tests of the runtime's packages share) and testcert
// (certificates made when a test runs). Only tests import them, and the benchmarks'
// load generator (bench/netcase) testcert, which does not import package
// testing for that reason.
package testkit
