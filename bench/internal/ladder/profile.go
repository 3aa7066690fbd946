package ladder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileTopNodes is how many functions the report keeps of a profile.
const profileTopNodes = 15

// maxProfile bounds what is read from the server's pprof handler.
const maxProfile = 64 << 20

// ProfileURL derives the server's CPU profile endpoint from its /metrics
// URL: srtwhep serves /debug/pprof/ on the metrics listener when
// metrics.pprof is on.
func ProfileURL(metrics string, d time.Duration) (string, error) {
	u, err := url.Parse(metrics)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("ladder: metrics URL %q: want http://HOST:PORT/metrics to find /debug/pprof/ next to it", metrics)
	}
	u.Path = "/debug/pprof/profile"
	u.RawQuery = fmt.Sprintf("seconds=%d", max(int(d/time.Second), 1))
	return u.String(), nil
}

// fetchProfile saves a CPU profile of the server taken over d to file.
func fetchProfile(ctx context.Context, profileURL string, d time.Duration, file string) error {
	// The handler answers after d; the client's own timeout must outlast it.
	c := &http.Client{Timeout: d + 30*time.Second}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, profileURL, nil)
	if err != nil {
		return fmt.Errorf("ladder: profile URL %q: %w", profileURL, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("ladder: CPU profile from %s: %w", profileURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = " (turn on metrics.pprof in the server's config)"
		}
		return fmt.Errorf("ladder: CPU profile from %s: %s%s", profileURL, resp.Status, hint)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("ladder: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, maxProfile+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxProfile {
		err = fmt.Errorf("profile larger than %d bytes", maxProfile)
	}
	if err != nil {
		return fmt.Errorf("ladder: CPU profile from %s: %w", profileURL, err)
	}
	return nil
}

// profileTop renders a saved profile as `go tool pprof -top`, its header
// and its first profileTopNodes functions. Go's profiles carry their
// symbols, so the server's binary is not needed.
func profileTop(ctx context.Context, file string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("ladder: go not on PATH, needed for `go tool pprof -top`; the raw profile is kept in " + file)
	}
	cmd := exec.CommandContext(ctx, goTool, "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", profileTopNodes), file)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("ladder: go tool pprof -top %s: %w", file, err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// profileStep takes the server's CPU profile over d and returns its top.
// dir keeps the raw profile ("" keeps it nowhere).
func profileStep(ctx context.Context, metrics string, n int, d time.Duration, dir string) (top, file string, err error) {
	pu, err := ProfileURL(metrics, d)
	if err != nil {
		return "", "", err
	}
	keep := dir != ""
	if !keep {
		dir, err = os.MkdirTemp("", "ladder-profile-")
		if err != nil {
			return "", "", fmt.Errorf("ladder: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("ladder: %w", err)
	}
	file = filepath.Join(dir, fmt.Sprintf("cpu-N%d.pprof", n))
	if err := fetchProfile(ctx, pu, d, file); err != nil {
		return "", "", err
	}
	top, err = profileTop(ctx, file)
	if !keep {
		file = ""
	}
	return top, file, err
}
