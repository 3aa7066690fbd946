package sockbuf

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sysctl(t *testing.T, file string) int {
	n, err := readInt(file)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A request within the sysctl maximum is granted (doubled); one above it
// is capped and reported with the sysctl line that lifts the cap.
func TestSetReadsBack(t *testing.T) {
	rmax, wmax := sysctl(t, rmemMaxFile), sysctl(t, wmemMaxFile)
	small := min(rmax, wmax, 64<<10)
	r, err := Set(listen(t), small, small)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recv != 2*small || r.Send != 2*small || r.RecvCapped() || r.SendCapped() || r.Fix() != "" {
		t.Errorf("within the maximum: %+v fix %q", r, r.Fix())
	}

	huge := max(rmax, wmax) + 1<<20
	r, err = Set(listen(t), huge, huge)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && r.Recv == 2*huge {
		t.Skip("this kernel grants past rmem_max (CAP_NET_ADMIN with SO_RCVBUFFORCE semantics?)")
	}
	if !r.RecvCapped() || !r.SendCapped() || r.Recv != 2*rmax || r.Send != 2*wmax {
		t.Fatalf("above the maximum: %+v (rmem_max %d, wmem_max %d)", r, rmax, wmax)
	}
	want := "sysctl -w net.core.rmem_max=" + itoa(huge) + " && sysctl -w net.core.wmem_max=" + itoa(huge)
	if r.Fix() != want {
		t.Errorf("fix %q, want %q", r.Fix(), want)
	}
	var buf testkit.LogBuffer
	Report(buf.Logger(slog.LevelInfo), "WebRTC UDP", "webrtc.socketBuffer", r)
	if lines := buf.Lines("level=WARN", "webrtc.socketBuffer", "sysctl -w net.core.rmem_max="); len(lines) != 1 {
		t.Errorf("warning: %q", buf.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestPredict(t *testing.T) {
	dir := t.TempDir()
	rmemMaxFile, wmemMaxFile = filepath.Join(dir, "r"), filepath.Join(dir, "w")
	t.Cleanup(func() {
		rmemMaxFile, wmemMaxFile = "/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"
	})
	for file, v := range map[string]string{rmemMaxFile: "212992\n", wmemMaxFile: "8388608\n"} {
		if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Predict(4<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recv != 2*212992 || !r.RecvCapped() || r.SendCapped() || r.Fix() != "sysctl -w net.core.rmem_max=4194304" {
		t.Errorf("%+v fix %q", r, r.Fix())
	}
}

// The drop counter moves when datagrams arrive at a full buffer.
func TestDrops(t *testing.T) {
	rx := listen(t)
	if _, err := Set(rx, 4096, 0); err != nil {
		t.Fatal(err)
	}
	d, err := NewDrops(rx)
	if err != nil {
		t.Fatal(err)
	}
	before, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	tx := listen(t)
	msg := make([]byte, 1200)
	for range 200 {
		if _, err := tx.WriteToUDP(msg, rx.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("drops %d → %d after 200 datagrams into a 4 KiB buffer", before, after)
	}
}
