// Package proctable reads the kernel's process table (/proc) as hostile input: every file
// is read up to a bound, a stat line is parsed after its command's last parenthesis (a
// command name may hold blanks and parentheses), and what cannot be read or parsed is
// skipped, never guessed. Another user's environment is not readable: such processes
// carry no variables.
package proctable

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
)

// Root is where the process table is read (a test's made-up table in tests).
var Root = "/proc"

// MaxEnviron bounds how much of a process's environment is read: a variable past it is
// not seen.
const MaxEnviron = 1 << 20

// Pids are the processes of the table, in the order the folder lists them.
func Pids() ([]int, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Stat is a process's parent, group and state letter (R, S, Z, ...) from its stat file.
func Stat(pid int) (ppid, pgid int, state byte, ok bool) {
	b, err := read(pid, "stat", 4096)
	if err != nil {
		return 0, 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, f[0][0], err1 == nil && err2 == nil
}

// Getenv is the value of each of names in a process's environment (absent: not set, or
// past MaxEnviron, or not readable).
func Getenv(pid int, names ...string) map[string]string {
	b, err := read(pid, "environ", MaxEnviron)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		for _, n := range names {
			if k == n {
				out[k] = v
			}
		}
	}
	return out
}

// Cmdline is a process's command line, its arguments joined by blanks (4 KiB at most).
func Cmdline(pid int) string {
	b, err := read(pid, "cmdline", 4096)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func read(pid int, file string, n int64) ([]byte, error) {
	f, err := os.Open(Root + "/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
