package slurm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestBrief(t *testing.T) {
	ctld := "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
	err := errors.Join(errors.New("squeue: exit status 1: "+ctld), errors.New("scontrol: exit status 1: "+ctld))
	got := Brief(err, "sacct: sacct: error: Problem talking to the database: Connection timed out")
	want := "squeue, scontrol: Unable to contact slurm controller (connect failure); sacct: Problem talking to the database: Connection timed out"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	long := Brief(errors.New("squeue: " + strings.Repeat("x", 6000) + "\n\tline\x1b[2J two"))
	if strings.ContainsAny(long, "\n\x1b") || len([]rune(long)) > 420 {
		t.Errorf("not one short line: %d runes %q", len([]rune(long)), long)
	}
	if Brief(nil) != "" {
		t.Error("nil")
	}
}

// Ten thousand distinct lines are five messages and a count, not a line of a megabyte.
func TestBriefIsBounded(t *testing.T) {
	var lines []string
	for i := range 10000 {
		lines = append(lines, fmt.Sprintf("squeue: error %d", i))
	}
	got := Brief(nil, lines...)
	if !strings.HasSuffix(got, "; and 9995 more messages") || strings.Count(got, ";") != 5 || len(got) > 2000 {
		t.Errorf("%d bytes: %.300s", len(got), got)
	}
}
