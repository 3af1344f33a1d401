//go:build linux

package process

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
)

// procRoot is where the kernel's process table is read.
var procRoot = "/proc"

// maxEnviron bounds how much of a process's environment is read.
const maxEnviron = 1 << 20

// found is a process with the runtime's marker, as /proc shows it.
type found struct {
	pid, pgid int
	name      string
	labels    map[string]string
}

// member is a process of a group.
type member struct {
	pid, ppid int
	cmdline   string
}

// scan finds the group leaders carrying the marker, of the processes this user may read
// (another user's environment is not readable: they are not this user's to end).
func scan() ([]found, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var out []found
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		_, pgid, ok := statOf(pid)
		if !ok || pgid != pid {
			continue // a group is found by its leader
		}
		name, labels, ok := markerOf(pid)
		if ok {
			out = append(out, found{pid: pid, pgid: pgid, name: name, labels: labels})
		}
	}
	return out, nil
}

// groupMembers are the processes of group pgid.
func groupMembers(pgid int) []member {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	var out []member
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, g, ok := statOf(pid)
		if !ok || g != pgid {
			continue
		}
		out = append(out, member{pid: pid, ppid: ppid, cmdline: cmdlineOf(pid)})
	}
	return out
}

// statOf is a process's parent and group, from /proc/PID/stat (after its command's closing
// parenthesis, which a command name may itself contain).
func statOf(pid int) (ppid, pgid int, ok bool) {
	b, err := readBounded(procRoot+"/"+strconv.Itoa(pid)+"/stat", 4096)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}

// markerOf is the runtime's marker in a process's environment.
func markerOf(pid int) (name string, labels map[string]string, ok bool) {
	b, err := readBounded(procRoot+"/"+strconv.Itoa(pid)+"/environ", maxEnviron)
	if err != nil {
		return "", nil, false
	}
	var rawLabels string
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		switch k {
		case MarkerName:
			name = v
		case MarkerLabels:
			rawLabels = v
		}
	}
	if name == "" {
		return "", nil, false
	}
	if json.Unmarshal([]byte(rawLabels), &labels) != nil {
		labels = nil // a garbled label set matches only an empty filter
	}
	return name, labels, true
}

func cmdlineOf(pid int) string {
	b, err := readBounded(procRoot+"/"+strconv.Itoa(pid)+"/cmdline", 4096)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func readBounded(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
