//go:build linux

package process

import (
	"encoding/json"

	"github.com/benchctl/benchctl/internal/proctable"
)

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
	pids, err := proctable.Pids()
	if err != nil {
		return nil, err
	}
	var out []found
	for _, pid := range pids {
		_, pgid, _, ok := proctable.Stat(pid)
		if !ok || pgid != pid {
			continue // a group is found by its leader
		}
		env := proctable.Getenv(pid, MarkerName, MarkerLabels)
		name := env[MarkerName]
		if name == "" {
			continue
		}
		var labels map[string]string
		if json.Unmarshal([]byte(env[MarkerLabels]), &labels) != nil {
			labels = nil // a garbled label set matches only an empty filter
		}
		out = append(out, found{pid: pid, pgid: pgid, name: name, labels: labels})
	}
	return out, nil
}

// groupMembers are the processes of group pgid.
func groupMembers(pgid int) []member {
	pids, _ := proctable.Pids()
	var out []member
	for _, pid := range pids {
		if ppid, g, _, ok := proctable.Stat(pid); ok && g == pgid {
			out = append(out, member{pid: pid, ppid: ppid, cmdline: proctable.Cmdline(pid)})
		}
	}
	return out
}
