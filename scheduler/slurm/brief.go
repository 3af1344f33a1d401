package slurm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/textsafe"
)

// briefPrefix is what Slurm's commands put before what went wrong: "exit status 1: ",
// "slurm_load_jobs error: ", "sacct: error: ".
var briefPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(exit status \d+: |[A-Za-z_]+: )?([A-Za-z_]+ )?error: `)
})

// Brief is what asking Slurm said, on one line for a person: each command's message
// (errs: a query's error, whose lines are "squeue: exit status 1: ...", and details such as
// JobState.Detail) without exit statuses and "error:" prefixes, commands that said the same
// named together: "squeue, scontrol: Unable to contact slurm controller (connect failure);
// sacct: Problem talking to the database: Connection timed out". Control characters are
// escaped, each message is cut to 200 characters, and after maxBriefMessages distinct
// messages the rest are counted ("and 9,995 more messages").
func Brief(err error, details ...string) string {
	var lines []string
	if err != nil {
		lines = strings.Split(err.Error(), "\n")
	}
	lines = append(lines, details...)
	var order []string
	who := map[string][]string{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		cmd, msg, ok := strings.Cut(l, ": ")
		if !ok || strings.ContainsAny(cmd, " \t") {
			cmd, msg = "", l
		}
		for {
			short := briefPrefix().ReplaceAllString(msg, "")
			if short == msg {
				break
			}
			msg = short
		}
		msg = textsafe.Line(strings.Join(strings.Fields(msg), " "))
		if r := []rune(msg); len(r) > 200 {
			msg = string(r[:199]) + "…"
		}
		if _, seen := who[msg]; !seen {
			order = append(order, msg)
		}
		if cmd != "" && !slices.Contains(who[msg], cmd) {
			who[msg] = append(who[msg], cmd)
		} else if who[msg] == nil {
			who[msg] = []string{}
		}
	}
	more := 0
	if len(order) > maxBriefMessages {
		order, more = order[:maxBriefMessages], len(order)-maxBriefMessages
	}
	parts := make([]string, len(order))
	for i, msg := range order {
		parts[i] = msg
		if len(who[msg]) > 0 {
			parts[i] = strings.Join(who[msg], ", ") + ": " + msg
		}
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more messages", more))
	}
	return strings.Join(parts, "; ")
}

// maxBriefMessages bounds the distinct messages Brief names.
const maxBriefMessages = 5
