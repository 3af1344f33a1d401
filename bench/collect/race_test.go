//go:build race

package main

// The race detector multiplies memory use; the memory test does not mean anything under it.
const raceEnabled = true
