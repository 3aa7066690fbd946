// Package admission refuses new viewers before the machine runs out of CPU.
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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
	// statPath and cgroupDir are overridden by tests.
	statPath, cgroupDir string
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
	if cfg.statPath == "" {
		cfg.statPath = "/proc/self/stat"
	}
	if cfg.cgroupDir == "" {
		cfg.cgroupDir = "/sys/fs/cgroup"
	}
	c := &Controller{cfg: cfg, cpus: availableCPUs(cfg.cgroupDir)}
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
	last, err := cpuSeconds(c.cfg.statPath)
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
			cur, err := cpuSeconds(c.cfg.statPath)
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

// cpuSeconds reads utime+stime of the process from /proc/PID/stat.
func cpuSeconds(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(string(b))
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// ParseStatCPU returns utime+stime in seconds from a /proc/PID/stat line.
// The command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
func ParseStatCPU(line string) (float64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, errors.New("malformed stat line: no ')'")
	}
	f := strings.Fields(line[i+1:])
	// After the name: state(3) ppid(4) … utime(14) stime(15); f[0] is field 3.
	if len(f) < 13 {
		return 0, errors.New("malformed stat line: too few fields")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed stat line: utime/stime not numbers")
	}
	return float64(ut+st) / clockTicks, nil
}

// availableCPUs is the affinity mask's size, capped by a cgroup v2 quota.
func availableCPUs(cgroupDir string) float64 {
	cpus := 1.0
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		cpus = float64(set.Count())
	}
	if q, ok := cgroupQuota(cgroupDir); ok && q < cpus {
		cpus = q
	}
	return cpus
}

// cgroupQuota reads cpu.max ("max 100000" or "50000 100000").
func cgroupQuota(dir string) (float64, bool) {
	b, err := os.ReadFile(dir + "/cpu.max")
	if err != nil {
		return 0, false
	}
	return ParseCPUMax(string(b))
}

// ParseCPUMax turns a cgroup v2 cpu.max line into a number of CPUs.
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
