package jobchan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// AbortError is the reason rank 0 gave for aborting the job, and the exit code it asks for.
type AbortError struct {
	Reason string
	Code   int
}

func (e *AbortError) Error() string { return "aborted: " + e.Reason }

// ExitCode is the code every node exits with (e.g. 2 when rank 0's build failed).
func (e *AbortError) ExitCode() int {
	if e.Code == 0 {
		return 1
	}
	return e.Code
}

// LostError is a peer that went silent (no message for LostTimeout) or whose connection
// dropped and did not come back in that time: a worker's view of rank 0.
type LostError struct {
	Rank     int
	Host     string
	LastSeen time.Time
	Why      string
}

func (e *LostError) Error() string {
	s := fmt.Sprintf("lost rank %d (%s) at %s", e.Rank, e.Host, e.LastSeen.UTC().Format(time.RFC3339))
	if e.Why != "" {
		s += ": " + e.Why
	}
	return s
}

// ExitCode is 1: the job could not go on, no benchmark verdict.
func (e *LostError) ExitCode() int { return 1 }

// RefusedError is rank 0 refusing this worker's join: another live process holds the rank.
// Two processes given one rank is a launch mistake, so it is bad input (exit 4).
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string      { return "refused by rank 0: " + e.Reason }
func (e *RefusedError) InvalidInput() bool { return true }

// MaxReason bounds a reason carried in a message: a 10,000-character build error line must
// still reach every worker in one message. The full text stays in the sender's status
// file and log; TruncateReason says so.
const MaxReason = 2 << 10

// TruncateReason returns reason cut to at most MaxReason bytes (on a UTF-8 boundary), with
// a note of how much was cut. Short reasons are returned as they are.
func TruncateReason(reason string) string {
	return truncate(reason, MaxReason)
}

func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	note := " … [" + strconv.Itoa(len(s)) + " bytes in all; the full text is in the sender's log and status.json]"
	cut := max - len(note)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " \n") + note
}
