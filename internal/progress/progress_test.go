package progress

import (
	"bytes"
	"errors"
	"testing"
)

// Byte reports are throttled (a burst of adds reports once), Finish always reports, and
// the totals are what was added.
func TestCounterThrottlesAndFinishes(t *testing.T) {
	var got []Report
	c := NewCounter(func(r Report) { got = append(got, r) }, "load", 100)
	for range 1000 {
		c.Add(1)
	}
	if len(got) != 1 || got[0].Done != 1 || got[0].Final {
		t.Fatalf("a burst of adds reported %+v; want one report of the first byte", got)
	}
	c.SetTotal(2000)
	c.Finish()
	last := got[len(got)-1]
	if want := (Report{Phase: "load", Done: 1000, Total: 2000, Final: true}); last != want {
		t.Errorf("final report %+v, want %+v", last, want)
	}
	if c.Done() != 1000 {
		t.Errorf("Done %d, want 1000", c.Done())
	}
}

// A counter without a Func counts; a nil counter does nothing and does not panic.
func TestCounterWithoutFuncOrNil(t *testing.T) {
	c := NewCounter(nil, "save", 0)
	c.Add(7)
	c.Finish()
	if c.Done() != 7 {
		t.Errorf("Done %d, want 7", c.Done())
	}
	var n *Counter
	n.Add(1)
	n.SetTotal(1)
	n.Finish()
	if n.Done() != 0 {
		t.Error("a nil counter counted")
	}
}

type failAfter struct {
	bytes.Buffer
	left int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.Buffer.Write(p[:f.left])
		f.left = 0
		return n, errors.New("disk full")
	}
	f.left -= len(p)
	return f.Buffer.Write(p)
}

// Writer counts what was written, also when the write fails part-way.
func TestWriterCountsWhatWasWritten(t *testing.T) {
	c := NewCounter(nil, "save", 0)
	w := Writer{W: &failAfter{left: 5}, C: c}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write([]byte("defg")); n != 2 || err == nil {
		t.Fatalf("write past the end: %d, %v", n, err)
	}
	if c.Done() != 5 {
		t.Errorf("Done %d, want 5", c.Done())
	}
}
