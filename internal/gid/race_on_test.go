//go:build race

package gid

const raceOn = true
