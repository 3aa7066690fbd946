// Package admission decides whether a new viewer is let in: not past the
// CPU the process may use (this file), not past its client's offer rate
// (offers.go), not past the slots for offers waiting for ICE and for
// handshakes, in total and per client (slots.go). A WHEP server keeps the
// last three for its viewers as one set of limits and tables (viewers.go).
//
// A media server that takes one viewer too many does not degrade gently:
// every viewer's frames start to queue, then drop, and ingest starves too.
// The controller samples the process's own CPU time and compares it with
// the CPU the process may use (its affinity mask, capped by a cgroup quota
// such as docker's cpus: 1.0). Past the configured share, new viewers are
// refused (HTTP 503 with Retry-After) while the ones already watching keep
// the headroom they need.
package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// ErrOverloaded is returned by Check while the process uses more CPU than
// allowed for new viewers.
var ErrOverloaded = errors.New("server CPU limit reached")

// Config of the controller.
type Config struct {
	// MaxCPU is the share (0..1] of the CPU available to the process above
	// which new viewers are refused; 0 disables the check.
	MaxCPU float64
	// Interval between samples (default 1 s). Decisions use the mean over
	// the last Window (default 3 s) so one busy second (a burst of new
	// sessions' DTLS handshakes) does not close the door.
	Interval, Window time.Duration
	Logger           *slog.Logger
	// cgroupRoot is where the cgroup v2 hierarchy is mounted; tests point
	// it at a directory of their own.
	cgroupRoot string
}

// Controller samples CPU use; Check is safe from any goroutine.
type Controller struct {
	cfg      Config
	cpus     float64
	limitX1k atomic.Int64 // MaxCPU × 1000; 0 = no limit
	usageX1k atomic.Int64 // mean usage over the window, share × 1000
	refused  atomic.Uint64
}

// New sizes the controller for the CPUs this process may use.
func New(cfg Config) *Controller {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Window < cfg.Interval {
		cfg.Window = 3 * cfg.Interval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.cgroupRoot == "" {
		cfg.cgroupRoot = "/sys/fs/cgroup"
	}
	c := &Controller{cfg: cfg, cpus: availableCPUs(cfg.cgroupRoot)}
	c.SetMaxCPU(cfg.MaxCPU)
	return c
}

// SetMaxCPU changes the limit (a config reload); 0 disables it.
func (c *Controller) SetMaxCPU(share float64) { c.limitX1k.Store(int64(share * 1000)) }

func (c *Controller) limit() float64 { return float64(c.limitX1k.Load()) / 1000 }

// CPUs is how many CPUs the process may use (fractional under a quota).
func (c *Controller) CPUs() float64 { return c.cpus }

// Usage is the mean share of the available CPU used over the window.
func (c *Controller) Usage() float64 { return float64(c.usageX1k.Load()) / 1000 }

// Refused counts viewers turned away by Check.
func (c *Controller) Refused() uint64 { return c.refused.Load() }

// Check returns ErrOverloaded (wrapped with the figures) when a new viewer
// would push the server past its limit.
func (c *Controller) Check() error {
	limit := c.limit()
	if limit <= 0 {
		return nil
	}
	if u := c.Usage(); u >= limit {
		c.refused.Add(1)
		return fmt.Errorf("%w: CPU at %.0f%% of %.1f cores, limit %.0f%%", ErrOverloaded, u*100, c.cpus, limit*100)
	}
	return nil
}

// Run samples until ctx ends. It samples even while no limit is set, so a
// limit set later by a reload acts at once (one read of /proc a second).
func (c *Controller) Run(ctx context.Context) error {
	n := int(c.cfg.Window / c.cfg.Interval)
	ring := make([]float64, 0, n)
	// A failed read (no /proc in a sandbox, say) is retried at the next
	// tick; until a first pair of samples exists no one is refused.
	last, err := cpuSeconds()
	haveLast := err == nil
	lastAt := time.Now()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	over := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			cur, err := cpuSeconds()
			if err != nil {
				continue
			}
			if !haveLast {
				last, lastAt, haveLast = cur, now, true
				continue
			}
			share := (cur - last) / now.Sub(lastAt).Seconds() / c.cpus
			last, lastAt = cur, now
			if len(ring) == n {
				ring = ring[1:]
			}
			ring = append(ring, share)
			var sum float64
			for _, v := range ring {
				sum += v
			}
			mean := sum / float64(len(ring))
			c.usageX1k.Store(int64(mean * 1000))
			limit := c.limit()
			overNow := limit > 0 && mean >= limit
			if overNow && !over {
				c.cfg.Logger.Warn("CPU limit reached: refusing new viewers until load drops; existing viewers keep playing",
					"cpu_percent", int(mean*100), "limit_percent", int(limit*100), "cpus", c.cpus)
			} else if !overNow && over {
				c.cfg.Logger.Info("CPU below limit again: accepting new viewers", "cpu_percent", int(mean*100))
			}
			over = overNow
		}
	}
}

// cpuSeconds is the process's user+system CPU time so far.
func cpuSeconds() (float64, error) {
	self, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	st, err := self.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// availableCPUs is the affinity mask's size, capped by a cgroup v2 quota.
func availableCPUs(cgroupRoot string) float64 {
	cpus := 1.0
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		cpus = float64(set.Count())
	}
	if q, ok := cgroupQuota(cgroupRoot); ok && q < cpus {
		cpus = q
	}
	return cpus
}

// cgroupQuota is the smallest cpu.max quota on the process's cgroup v2
// path, from its own cgroup up to the root: a parent's quota caps all its
// children. systemd's CPUQuota= sits on the service's own cgroup, docker's
// --cpus on the container's, which its cgroup namespace shows as the root.
func cgroupQuota(root string) (float64, bool) {
	dir := "/"
	if self, err := procfs.Self(); err == nil {
		if cgs, err := self.Cgroups(); err == nil {
			for _, cg := range cgs {
				// The v2 hierarchy is the one with ID 0; with cgroup v1
				// alone there is none and only the root is tried.
				if cg.HierarchyID == 0 {
					dir = path.Clean("/" + cg.Path)
				}
			}
		}
	}
	best, found := 0.0, false
	for {
		b, err := os.ReadFile(filepath.Join(root, dir, "cpu.max"))
		if err == nil {
			if q, ok := ParseCPUMax(string(b)); ok && (!found || q < best) {
				best, found = q, true
			}
		}
		if dir == "/" {
			return best, found
		}
		dir = path.Dir(dir)
	}
}

// ParseCPUMax turns a cgroup v2 cpu.max line ("max 100000" or
// "50000 100000") into a number of CPUs; procfs has no reader for it.
func ParseCPUMax(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || period <= 0 || quota <= 0 {
		return 0, false
	}
	return quota / period, true
}
