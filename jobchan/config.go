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
