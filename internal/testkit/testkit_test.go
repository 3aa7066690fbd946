package testkit

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// WaitLog must wake on the write itself: a line written from another
// goroutine after the wait began is found, and found once.
func TestWaitLogWakesOnWrite(t *testing.T) {
	var b LogBuffer
	written := make(chan struct{})
	go func() {
		defer close(written)
		fmt.Fprintf(&b, "level=INFO msg=other\n")
		fmt.Fprintf(&b, "level=WARN msg=\"publisher closed\" path=live/a\n")
	}()
	line := b.WaitLog(t, 10*time.Second, "publisher closed", "path=live/a")
	<-written
	if !strings.HasPrefix(line, "level=WARN") {
		t.Fatalf("WaitLog returned %q", line)
	}
	if got := b.Lines("msg="); len(got) != 2 {
		t.Fatalf("Lines = %q, want both lines", got)
	}
}

func TestLoggerOmitsTime(t *testing.T) {
	var b LogBuffer
	b.Logger(0).Info("hello", "k", 1)
	if got := b.String(); got != "level=INFO msg=hello k=1\n" {
		t.Fatalf("logged %q", got)
	}
}

// A process that exits without printing the line fails the wait at once,
// not at its timeout; the failure is observed on a fake TB.
func TestProcessWaitLogFailsOnExit(t *testing.T) {
	p := StartProcess(t, "sh", exec.Command("sh", "-c", "echo starting; exit 3"))
	ft := &fakeTB{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine it runs on, as in a test.
		defer close(done)
		p.WaitLog(ft, time.Minute, "ready")
	}()
	<-done
	if !ft.failed || !strings.Contains(ft.msg, "sh exited before logging") || time.Since(start) > 30*time.Second {
		t.Fatalf("WaitLog on an exited process: failed=%v msg=%q", ft.failed, ft.msg)
	}
	if ok, err := p.Exited(); !ok || err == nil {
		t.Fatalf("Exited() = %v, %v; want true and exit status 3", ok, err)
	}
}

func TestOfferRecvonlyH264(t *testing.T) {
	o := Offer(t, OfferOptions{Audio: true})
	for _, want := range []string{"m=video ", "H264/90000", "m=audio ", "opus/48000", "a=recvonly", "typ host"} {
		if !strings.Contains(o.SDP, want) {
			t.Errorf("offer lacks %q:\n%s", want, o.SDP)
		}
	}
	if strings.Contains(o.SDP, ".local") {
		t.Errorf("offer has an mDNS candidate:\n%s", o.SDP)
	}
}

// fakeTB records a failure instead of ending the real test.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
