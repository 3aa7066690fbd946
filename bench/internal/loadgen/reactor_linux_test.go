package loadgen

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestControlInfo reads a control buffer as the kernel writes it for a
// socket with UDP_GRO and SO_TIMESTAMPNS.
func TestControlInfo(t *testing.T) {
	oob := make([]byte, unix.CmsgSpace(4)+unix.CmsgSpace(16))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], 1188)
	next := oob[unix.CmsgSpace(4):]
	h = (*unix.Cmsghdr)(unsafe.Pointer(&next[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(16))
	ts := (*unix.Timespec)(unsafe.Pointer(&next[unix.CmsgLen(0)]))
	*ts = unix.NsecToTimespec(base + 123456789)

	seg, at := controlInfo(oob)
	if seg != 1188 || at != base+123456789 {
		t.Errorf("controlInfo = %d, %d; want 1188, %d", seg, at, base+123456789)
	}
	if seg, at := controlInfo(nil); seg != 0 || at != 0 {
		t.Errorf("empty control buffer gave %d, %d", seg, at)
	}
}
