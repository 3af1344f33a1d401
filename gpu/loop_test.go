package gpu_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benchctl/benchctl/gpu"
)

// loopSampler answers GPU 0 and, once asked n times, says GPU 1 has no counter; a round
// asked after stop ends with GPU 1 cut short.
type loopSampler struct {
	n      int
	cutAt  int
	cancel context.CancelFunc
}

func (s *loopSampler) Sample(ctx context.Context) []gpu.Reading {
	s.n++
	if s.n == s.cutAt {
		s.cancel()
		return []gpu.Reading{{Index: 0}, {Index: 1, Err: ctx.Err()}}
	}
	return []gpu.Reading{{Index: 0}, {Index: 1}}
}
func (s *loopSampler) Source() string { return "loop" }
func (s *loopSampler) Unavailable() []gpu.Unavailable {
	if s.n >= 2 {
		return []gpu.Unavailable{{GPU: 1, Field: "energy", Why: "no counter"}}
	}
	return nil
}
func (s *loopSampler) Close() error { return nil }

// The loop's rounds come every interval (on the bubble's clock: exactly), each fact the
// sampler cannot give is said once, the round the end cuts keeps what was read without
// the cut GPU, and an error of the caller stops it.
func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		smp := &loopSampler{cutAt: 4, cancel: cancel}
		start := time.Now()
		var rounds []gpu.Round
		err := gpu.Loop(ctx, smp, 100*time.Millisecond, nil, func(r gpu.Round) error { rounds = append(rounds, r); return nil })
		if err != nil || len(rounds) != 4 {
			t.Fatalf("%v, %d rounds", err, len(rounds))
		}
		for i, r := range rounds {
			if want := start.Add(time.Duration(i) * 100 * time.Millisecond); !r.At.Equal(want) {
				t.Errorf("round %d at %v, want %v", i, r.At.Sub(start), want.Sub(start))
			}
		}
		if len(rounds[0].Unavailable) != 0 || len(rounds[1].Unavailable) != 1 || len(rounds[2].Unavailable) != 0 {
			t.Errorf("unavailable said %v, %v, %v; want once, in round 2", rounds[0].Unavailable, rounds[1].Unavailable, rounds[2].Unavailable)
		}
		if last := rounds[3]; !last.Cut || len(last.Readings) != 1 || last.Readings[0].Index != 0 {
			t.Errorf("the cut round: %+v", last)
		}

		stop := errors.New("the output is gone")
		n := 0
		err = gpu.Loop(context.Background(), &loopSampler{}, time.Second, nil, func(gpu.Round) error { n++; return stop })
		if err != stop || n != 1 {
			t.Errorf("%v after %d rounds", err, n)
		}
	})
}
