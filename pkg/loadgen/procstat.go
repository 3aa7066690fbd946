package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports (the kernel exports a fixed
// value to user space whatever CONFIG_HZ is), so sysconf is not needed.
const clockTicks = 100

// ParseStatCPU returns utime+stime from the content of /proc/PID/stat. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func ParseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadgen: /proc stat line has no ')': %q", truncate(stat))
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')' come field 3 (state) onward: utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("loadgen: /proc stat line too short (%d fields after comm)", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("loadgen: /proc stat utime/stime not numbers: %q %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// ParseVmRSS returns VmRSS in bytes from the content of /proc/PID/status.
func ParseVmRSS(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("loadgen: unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadgen: VmRSS %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("loadgen: no VmRSS in status (kernel thread or exited process?)")
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// Proc reads CPU time and RSS of one process from /proc.
type Proc struct {
	PID  int    // 0 means this process
	Root string // "" means /proc
}

func (p Proc) path(file string) string {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	pid := "self"
	if p.PID > 0 {
		pid = strconv.Itoa(p.PID)
	}
	return root + "/" + pid + "/" + file
}

// CPU returns the process's user+system CPU time so far.
func (p Proc) CPU() (time.Duration, error) {
	b, err := os.ReadFile(p.path("stat"))
	if err != nil {
		return 0, fmt.Errorf("loadgen: read CPU time: %w (is the PID right and the process running?)", err)
	}
	return ParseStatCPU(b)
}

// RSS returns the process's resident set size in bytes.
func (p Proc) RSS() (uint64, error) {
	b, err := os.ReadFile(p.path("status"))
	if err != nil {
		return 0, fmt.Errorf("loadgen: read RSS: %w", err)
	}
	return ParseVmRSS(b)
}

// CPUPercent is CPU time used over wall time, in % of one core.
func CPUPercent(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}
