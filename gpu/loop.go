package gpu

import (
	"context"
	"slices"
	"time"
)

// Round is one round of a sampling Loop.
type Round struct {
	At       time.Time
	Readings []Reading
	// Unavailable are the facts the sampler newly says it cannot give (since the round
	// before): each is said once.
	Unavailable []Unavailable
	// Cut says the loop's ctx ended during the round: Readings are what was read before,
	// without the GPUs whose reading the end cut short (their error is the end's, not the
	// GPU's). It is the last round.
	Cut bool
}

// Loop samples smp every `every`, the first round at once, until ctx ends, handing each
// round to each (which may stop the loop with an error, which Loop returns; the end of
// ctx is no error). A round's Sample is bounded by max(every, 1 s): a slow round at 100 ms
// is not every GPU's failure. now stamps the rounds (nil: time.Now). A run's telemetry
// (package runner) and `benchctl gpus --watch` both sample with it.
func Loop(ctx context.Context, smp Sampler, every time.Duration, now func() time.Time, each func(Round) error) error {
	if now == nil {
		now = time.Now
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	said := 0
	for {
		per, cancel := context.WithTimeout(ctx, max(every, time.Second))
		rs := smp.Sample(per)
		cancel()
		if ctx.Err() != nil {
			rs = slices.DeleteFunc(rs, func(r Reading) bool { return r.Err != nil })
			return each(Round{At: now(), Readings: rs, Cut: true})
		}
		r := Round{At: now(), Readings: rs}
		un := smp.Unavailable()
		r.Unavailable = un[min(said, len(un)):]
		said = len(un)
		if err := each(r); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
