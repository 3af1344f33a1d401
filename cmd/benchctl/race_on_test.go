//go:build race

package main

// raceEnabled: the race detector's shadow memory makes a process's resident set no
// measure of benchctl's memory.
const raceEnabled = true
