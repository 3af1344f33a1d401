package jobchan

import (
	"log/slog"
	"os"
	"strconv"
	"time"
)

// Config is shared by the leader (rank 0) and the workers.
type Config struct {
	Job    string   // job id with attempt, e.g. "1234.0": other jobs' messages are rejected
	Rank   int      //
	World  int      //
	Hosts  []string // host of each rank, for messages
	Secret []byte   // per-job secret for the HMACs
	Master string   // rank 0's address (host name or IP)
	Ports  []int    // the job's port range; the leader binds the first free one
	// Heartbeat is how often each side sends a heartbeat (default 5 s). A peer silent for
	// LostAfter heartbeats (3) is lost: rank 0 aborts the job naming it; a worker that
	// loses rank 0 ends with a *LostError.
	Heartbeat time.Duration
	// LogEvery is how often a waiting side logs who it waits for (default 5 s).
	LogEvery time.Duration
	Log      *slog.Logger
	// Now is the clock (default time.Now); tests set a fake one.
	Now func() time.Time
	// FanOut is how many connections rank 0 holds at most (default 64). A job with more
	// workers than that is a two-level tree: the workers are split into groups of FanOut,
	// the first rank of each group relays for the others (they connect to it, it connects
	// to rank 0), so that no node holds more than about FanOut connections and heartbeats.
	FanOut int
	// AddrOf, if not nil, gives the host name or IP address at which a rank can be reached
	// (default: rank 0 at Master, the others at their Hosts entry).
	AddrOf func(rank int) string
	// Publish, if not nil, is told the address a relay listens on (so that the rest of its
	// group can find it, as workers find rank 0 through the job folder).
	Publish func(rank int, addr string)

	// gateMax, for tests, bounds the connections waiting to authenticate (0: a quarter of
	// the open-file limit, see internal/admit).
	gateMax int
}

// DefaultFanOut is the fan-out when Config.FanOut is zero.
const DefaultFanOut = 64

func (c *Config) fanOut() int {
	if c.FanOut > 0 {
		return c.FanOut
	}
	return DefaultFanOut
}

// tree reports whether the job's workers are in relayed groups.
func (c *Config) tree() bool { return c.World-1 > c.fanOut() }

// group is the index of a worker rank's group (ranks 1..fanOut are group 0).
func (c *Config) group(rank int) int { return (rank - 1) / c.fanOut() }

// Parent is the rank a worker connects to: rank 0, or its group's relay.
func (c *Config) Parent(rank int) int {
	if rank <= 0 || !c.tree() {
		return 0
	}
	if relay := 1 + c.group(rank)*c.fanOut(); relay != rank {
		return relay
	}
	return 0
}

// IsRelay reports whether a worker rank relays for a group.
func (c *Config) IsRelay(rank int) bool {
	return rank > 0 && c.tree() && (rank-1)%c.fanOut() == 0
}

// children are the ranks that connect to rank (rank 0 or a relay).
func (c *Config) children(rank int) []int {
	var out []int
	switch {
	case rank == 0 && !c.tree():
		for r := 1; r < c.World; r++ {
			out = append(out, r)
		}
	case rank == 0:
		for r := 1; r < c.World; r += c.fanOut() {
			out = append(out, r)
		}
	case c.IsRelay(rank):
		for r := rank + 1; r < min(rank+c.fanOut(), c.World); r++ {
			out = append(out, r)
		}
	}
	return out
}

// LostAfter is how many heartbeat periods of silence make a peer lost.
const LostAfter = 3

// DefaultHeartbeat is the heartbeat period when Config.Heartbeat is zero.
const DefaultHeartbeat = 5 * time.Second

func (c *Config) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

func (c *Config) every() time.Duration {
	if c.LogEvery > 0 {
		return c.LogEvery
	}
	return 5 * time.Second
}

func (c *Config) heartbeat() time.Duration {
	if c.Heartbeat > 0 {
		return c.Heartbeat
	}
	return DefaultHeartbeat
}

// LostTimeout is how long a silent peer has before it is lost.
func (c *Config) LostTimeout() time.Duration { return LostAfter * c.heartbeat() }

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) host(rank int) string {
	if rank >= 0 && rank < len(c.Hosts) && c.Hosts[rank] != "" {
		return c.Hosts[rank]
	}
	return "rank " + strconv.Itoa(rank)
}

// addrOf is where rank can be reached (without port).
func (c *Config) addrOf(rank int) string {
	if c.AddrOf != nil {
		if a := c.AddrOf(rank); a != "" {
			return a
		}
	}
	if rank == 0 {
		return c.Master
	}
	return c.host(rank)
}

// self is how this process names itself to its peer: host name and process id.
func self() (string, int) {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown host"
	}
	return h, os.Getpid()
}

// ioTimeout bounds one send, and the handshake's reads.
const ioTimeout = 10 * time.Second

// handshakeTimeout bounds a connection that has not authenticated yet: a real peer
// answers in milliseconds; a silent or slow one must not hold a handshake slot for long.
const handshakeTimeout = 3 * time.Second
