package deploycheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProcSys is a /proc/sys with the two socket buffer limits.
func fakeProcSys(t *testing.T, rmem, wmem string) string {
	t.Helper()
	dir := t.TempDir()
	core := filepath.Join(dir, "net", "core")
	if err := os.MkdirAll(core, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, core, "rmem_max", rmem+"\n")
	writeFile(t, core, "wmem_max", wmem+"\n")
	return dir
}

// deploy.sh raises the kernel's socket buffer limits the server's 4 MiB
// buffers need, persistently, and never lowers them.
func TestDeploySysctl(t *testing.T) {
	cases := []struct {
		name, rmem, wmem string
		want, notWant    []string
	}{
		{"stock kernel", "212992", "212992",
			[]string{"would write /etc/sysctl.d/60-srtwhep.conf: net.core.rmem_max=8388608 net.core.wmem_max=8388608",
				"sysctl -q -p /etc/sysctl.d/60-srtwhep.conf"}, nil},
		{"only wmem low", "16777216", "212992",
			[]string{"would write /etc/sysctl.d/60-srtwhep.conf: net.core.wmem_max=8388608"},
			[]string{"net.core.rmem_max=8388608"}},
		{"already high", "8388608", "33554432", nil,
			[]string{"sysctl", "60-srtwhep.conf"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			envFile := filepath.Join(t.TempDir(), ".env")
			r := runDeploy(t, envFile, []string{"PUBLIC_IP=203.0.113.7", "DEPLOY_PROC_SYS=" + fakeProcSys(t, c.rmem, c.wmem)}).ok(t)
			for _, w := range c.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(r.stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, r.stdout)
				}
			}
			// The limits are set before the server starts, so its
			// start-up check finds them raised.
			if i, j := strings.Index(r.stdout, "sysctl -q -p"), strings.Index(r.stdout, "up -d --build"); i >= 0 && (j < 0 || i > j) {
				t.Errorf("sysctl runs after compose up:\n%s", r.stdout)
			}
		})
	}
}
