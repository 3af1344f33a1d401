package jobchan

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// What workers say as they arrive reaches rank 0 whole, through the relays of a tree too
// (20 ranks in groups of 4), before rank 0 releases the phase with data decided from it.
func TestArrivalDataReachesRankZero(t *testing.T) {
	for _, fanOut := range []int{DefaultFanOut, 4} {
		t.Run(fmt.Sprint("fanOut=", fanOut), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const world = 20
			l, ws := startTree(t, ctx, world, fanOut, 0)
			var wg sync.WaitGroup
			got := make([]map[string]string, world)
			for r := 1; r < world; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var err error
					data := map[string]string{fmt.Sprintf("have.%d", r): fmt.Sprint(r % 3)}
					if r == 7 {
						data = nil // saying nothing is allowed
					}
					if got[r], err = ws[r].WaitWith(ctx, "have", data); err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}()
			}
			said, err := l.Gather(ctx, "have")
			if err != nil {
				t.Fatal(err)
			}
			if len(said) != world-2 {
				t.Errorf("rank 0 heard %d keys, want %d: %v", len(said), world-2, said)
			}
			for r := 1; r < world; r++ {
				k := fmt.Sprintf("have.%d", r)
				if v, ok := said[k]; r == 7 && ok || r != 7 && v != fmt.Sprint(r%3) {
					t.Errorf("%s = %q", k, v)
				}
			}
			if err := l.Release(ctx, "have", map[string]string{"stream": "1"}); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for r := 1; r < world; r++ {
				if got[r]["stream"] != "1" {
					t.Errorf("rank %d got release %v", r, got[r])
				}
			}
		})
	}
}

// Arrival data that would not fit one message is refused before it is sent, naming the key.
func TestArrivalDataTooBig(t *testing.T) {
	if err := checkArrivalData(map[string]string{"have.1": strings.Repeat("x", maxValue+1)}); err == nil || !strings.Contains(err.Error(), `"have.1"`) {
		t.Errorf("a 4 KiB+1 value: %v", err)
	}
	big := map[string]string{}
	for i := 0; i < 40; i++ {
		big[fmt.Sprint("k", i)] = strings.Repeat("y", 2000)
	}
	if err := checkArrivalData(big); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("80 KB: %v", err)
	}
	if err := checkArrivalData(map[string]string{"have.1": "0,1,2"}); err != nil {
		t.Error(err)
	}
}

// No worker answers for another: rank 1's "have.2" is dropped (rank 2's own stands), and
// what each worker may say over the whole job is bounded, so that one that says too much
// does not use up another's share. (Before: the bound was the job's, and rank 1 arriving
// first with 100 keys crowded out rank 2's.)
func TestArrivalDataIsEachWorkersOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig(3, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	many := map[string]string{"have.1": "0", "have.2": "0", "bogus": "x", "7": "y"}
	for i := 0; i < 100; i++ {
		many[fmt.Sprintf("k%d.1", i)] = "z"
	}
	go ws[0].WaitWith(ctx, "have", many)
	waitArrived(t, ctx, l, "have", 1) // rank 1 first: its keys must not use up rank 2's share
	go ws[1].WaitWith(ctx, "have", map[string]string{"have.2": ""})
	said, err := l.Gather(ctx, "have")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := said["have.2"]; !ok || v != "" {
		t.Errorf("have.2 = %q (%v): rank 1 answered for rank 2", v, ok)
	}
	if said["have.1"] != "0" && len(said) > 0 {
		t.Logf("have.1 = %q (kept only within the bound)", said["have.1"])
	}
	if _, ok := said["bogus"]; ok {
		t.Error("a key without a rank was kept")
	}
	if _, ok := said["7"]; ok {
		t.Error("a bare number was kept as a key")
	}
	if n := len(said); n > 4*2 {
		t.Errorf("rank 0 kept %d keys from a job of 2 workers, want at most 4 each", n)
	}
	l.Release(ctx, "have", nil)
}
