// Package testkit holds the project's test kits, apart from the loop's
// machinery and the leaves: spindletest (helpers that drive executors in
// tests) and hooktest (a recorder of hook events). Only tests import them.
package testkit
