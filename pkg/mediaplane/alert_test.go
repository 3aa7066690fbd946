package mediaplane

import (
	"errors"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// TestForgedAlert: after the handshake, datagrams from the viewer's own
// address that start with the alert content type (21) but are not
// alerts of its session (a plaintext close_notify of epoch 0, one of the
// session's epoch with a forged body, a truncated one) leave the viewer
// connected; the peer's real close_notify ends it. On main the first of
// them ended it.
func TestForgedAlert(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)

	forged := [][]byte{
		// close_notify in the clear, epoch 0, sequence 1.
		{21, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 1, 0},
		// epoch 1 (the session's), 8-byte explicit nonce and a body
		// with a tag that is not the session's.
		append([]byte{21, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 9, 0, 26}, make([]byte, 26)...),
		// a header alone.
		{21, 0xfe, 0xfd, 0, 1},
	}
	before := srv.Stats().ForgedAlerts
	for _, b := range forged {
		if _, err := p.conn.WriteToUDPAddrPort(b, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the forged alerts counted", func() bool {
		return srv.Stats().ForgedAlerts-before == uint64(len(forged))
	})
	select {
	case <-v.Done():
		t.Fatalf("a forged alert ended the viewer: %v", v.Err())
	default:
	}
	t.Logf("%d forged alerts from the viewer's address: ignored, the viewer stays connected", len(forged))

	// The peer's own close_notify, encrypted with the session's keys.
	if err := p.dtls.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-v.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the peer's close_notify did not end the viewer")
	}
	if err := v.Err(); !errors.Is(err, plane.ErrPeerClosed) {
		t.Errorf("viewer ended with %v, want %v", err, plane.ErrPeerClosed)
	}
}
