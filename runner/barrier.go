package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benchctl/benchctl/runner/jobsecret"

	"github.com/benchctl/benchctl/fanout"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/jobdir"
)

func (r *nodeRun) barrierCtx(ctx context.Context) context.Context {
	d := r.o.BarrierTimeout
	if d <= 0 {
		d = time.Hour
	}
	c, cancel := context.WithTimeout(ctx, d)
	go func() { <-c.Done(); cancel() }()
	return c
}

// meet sets up the barrier: rank 0 listens and publishes its address; workers join.
func (r *nodeRun) meet(ctx context.Context) error {
	n := r.node
	if n.World == 1 {
		return nil
	}
	end := r.st.Phase(jobdir.PhaseBarrier)
	bctx := r.barrierCtx(ctx)
	secret, err := jobsecret.Of(bctx, r.o.Lookup, r.job, n, func(msg string) { r.log.Warn(msg) })
	if err != nil {
		end(err)
		return err
	}
	r.secret = secret
	cfg := jobchan.Config{Job: n.JobID + "." + fmt.Sprint(n.Attempt), Rank: n.Rank, World: n.World, Hosts: n.Hosts,
		Secret: secret, Master: n.MasterAddr, Ports: n.BarrierPorts(), Log: r.log, Heartbeat: r.heartbeat()}
	r.chanCfg = cfg
	if n.Rank == 0 {
		l, err := jobchan.Listen(cfg)
		if err != nil {
			end(err)
			return err
		}
		r.leader = l
		if err := r.job.WriteFile(jobdir.BarrierAddrName(0), []byte(l.Addr+"\n")); err != nil {
			r.log.Warn("could not publish the barrier address; workers will probe the port range", "err", err)
		}
		r.log.Info("barrier listening", "addr", l.Addr)
	} else {
		// Relays (in jobs of more than 64 workers) publish their address for their group.
		cfg.Publish = func(rank int, addr string) {
			if err := r.job.WriteFile(jobdir.BarrierAddrName(rank), []byte(addr+"\n")); err != nil {
				r.log.Warn("could not publish the relay address; the group will probe the port range", "err", err)
			}
		}
		hint := func(rank int) string {
			b, err := safefile.ReadFile(r.dir.BarrierAddr(rank), 4<<10) // never blocks on a FIFO
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		w, err := jobchan.Join(bctx, cfg, hint)
		if err != nil {
			end(err)
			return err
		}
		r.worker = w
	}
	end(nil)
	return nil
}

// phase is one barrier phase for every rank (rank 0 releases once all arrived).
func (r *nodeRun) phase(ctx context.Context, name string, data map[string]string) error {
	switch {
	case r.leader != nil:
		if err := r.leader.Release(r.barrierCtx(ctx), name, data); err != nil {
			if _, aborted := r.leader.Aborted(); !aborted {
				r.leader.Abort(err.Error(), exitcode.Failure)
			}
			return err
		}
	case r.worker != nil:
		if _, err := r.worker.Wait(r.barrierCtx(ctx), name); err != nil {
			return err
		}
	}
	return nil
}

// phaseData is phase that also hands rank 0's data to every rank: rank 0 sends data, the
// others return what it sent.
func (r *nodeRun) phaseData(ctx context.Context, name string, data map[string]string) (map[string]string, error) {
	if r.worker != nil {
		return r.worker.Wait(r.barrierCtx(ctx), name)
	}
	return data, r.phase(ctx, name, data)
}

// heartbeat is the job channel's period: --heartbeat, else the manifest's, else the default.
func (r *nodeRun) heartbeat() time.Duration {
	if r.o.Heartbeat > 0 {
		return r.o.Heartbeat
	}
	if h := time.Duration(r.o.Manifest.Job.Heartbeat); h > 0 {
		return h
	}
	return jobchan.DefaultHeartbeat
}

// fail tells the other nodes that this one failed: rank 0 aborts, a worker reports. The
// reason is cut for the wire; the whole text stays in this node's status and log.
func (r *nodeRun) fail(err error, code int) {
	switch {
	case r.leader != nil:
		r.leader.Abort(jobchan.TruncateReason(fmt.Sprintf("rank 0 (%s) %s", r.node.Host, r.failReason(err))), code)
	case r.worker != nil:
		if ferr := r.worker.Fail(r.failReason(err), code); ferr != nil {
			r.log.Warn("could not tell rank 0 that this node failed", "err", ferr)
		}
	}
}

// failReason is what the job hears of this node's failure, after its rank and host. An
// image stream that failed elsewhere (a rank that died, or whose engine refused the load)
// is reported by every rank that sees it, the first of them perhaps before the job channel
// knows of the rank where it began: the reason names that rank first.
func (r *nodeRun) failReason(err error) string {
	var fe *fanout.Error
	if errors.As(err, &fe) && fe.Rank != r.node.Rank && fe.Rank >= 0 && fe.Rank < len(r.node.Hosts) {
		return fmt.Sprintf("saw the image stream fail at rank %d (%s): %v", fe.Rank, r.node.Hosts[fe.Rank], err)
	}
	return fmt.Sprintf("failed: %v", err)
}

// failEarly is fail before the barrier exists: join it just to say so, briefly.
func (r *nodeRun) failEarly(ctx context.Context, err error) {
	if r.node.World == 1 {
		return
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	saved := r.o.BarrierTimeout
	r.o.BarrierTimeout = 30 * time.Second
	defer func() { r.o.BarrierTimeout = saved }()
	if r.meet(short) != nil {
		return
	}
	r.fail(err, exitcode.Invalid)
	if r.leader != nil { // keep listening until every worker has heard (or 30 s)
		for len(r.leader.Connected()) < r.node.World-1 && short.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the message out
	r.closeBarrier()
}

func (r *nodeRun) closeBarrier() {
	if r.leader != nil {
		time.Sleep(100 * time.Millisecond) // let the last release reach slow workers
		r.leader.Close()
		r.leader = nil
	}
	if r.worker != nil {
		r.worker.Close()
		r.worker = nil
	}
}
