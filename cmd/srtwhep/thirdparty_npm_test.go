package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// npmThirdParty installs testdata/thirdparty's locked packages with
// `npm ci` and bundles the CommonJS player, once: the result is kept in
// the user's cache directory ($XDG_CACHE_HOME or ~/.cache, under
// srtwhep-npm/thirdparty-HASH, HASH of package.json and the lock), so
// later runs skip npm altogether. The install goes to a fresh directory
// renamed into place only when complete, so an interrupted one is never
// mistaken for one; entries for other lock files are removed then.
func npmThirdParty(t *testing.T) string {
	t.Helper()
	var manifest [][]byte
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(thirdPartyDir, f))
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, b)
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "srtwhep-npm")
	dir := filepath.Join(cache, "thirdparty-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, eyevinnBundle)); err == nil {
		return dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm not found: this test installs third-party WHEP players from the npm registry (%s); install Node.js with npm (Debian: `apt-get install -y nodejs npm`; scripts/deps.sh test checks for it)", thirdPartyDir)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for i, f := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(tmp, f), manifest[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Bounded: a registry that does not answer fails the test in 2 min.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = tmp
		cmd.WaitDelay = 5 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (not done within 2 min: is the npm registry reachable?)", ctx.Err())
			}
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	began := time.Now()
	// --ignore-scripts: no package runs code at install; esbuild finds its
	// binary in the @esbuild/<platform> package npm picks without them.
	run(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error")
	installed := time.Since(began)
	entry := filepath.Join(tmp, "entry.js")
	if err := os.WriteFile(entry, []byte("export { WebRTCPlayer } from \"@eyevinn/webrtc-player\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(filepath.Join(tmp, "node_modules", ".bin", "esbuild"), entry, "--bundle", "--format=esm", "--platform=browser",
		"--log-level=warning", "--outfile="+filepath.Join(tmp, eyevinnBundle))
	if err := os.Rename(tmp, dir); err != nil {
		// A concurrent run may have won the race.
		if _, err2 := os.Stat(filepath.Join(dir, eyevinnBundle)); err2 != nil {
			t.Fatalf("cache the npm install: %v", err)
		}
	}
	// Entries of other lock files, and installs that a killed run left
	// half done, go.
	old, _ := filepath.Glob(filepath.Join(cache, "thirdparty-*"))
	for _, o := range old {
		if o != dir {
			_ = os.RemoveAll(o)
		}
	}
	left, _ := filepath.Glob(filepath.Join(cache, ".install-*"))
	for _, l := range left {
		if fi, err := os.Stat(l); err == nil && time.Since(fi.ModTime()) > time.Hour {
			_ = os.RemoveAll(l)
		}
	}
	t.Logf("npm ci into %s: %v, esbuild bundle: %v", dir, installed.Round(time.Millisecond), (time.Since(began) - installed).Round(time.Millisecond))
	return dir
}

// listenTCPIn opens a TCP listener on 127.0.0.1:0 inside ns, the same
// way listenUDPIn opens its socket: a locked thread visits ns for the
// call and comes back before it is unlocked.
func listenTCPIn(t *testing.T, ns *netns) net.Listener {
	t.Helper()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer home.Close()
	there, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err2 := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err2 != nil {
			// Stuck in ns: exit locked so Go discards the thread.
			done <- result{ln, errors.Join(err, fmt.Errorf("setns back: %w", err2))}
			return
		}
		runtime.UnlockOSThread()
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		if r.ln != nil {
			r.ln.Close()
		}
		t.Fatalf("TCP listener inside netns %s: %v", ns.name, r.err)
	}
	return r.ln
}
