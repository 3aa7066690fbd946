package pionslog

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/ice/v4"
)

// These tests make pion's own muxes write the warnings that srtwhep lowers,
// so a pion upgrade that rewords them fails here instead of bringing the
// WARN lines back.

// TestWildcardUDPMuxIsQuiet: the mux on 0.0.0.0, as pkg/whep builds it,
// logs nothing at warn.
func TestWildcardUDPMuxIsQuiet(t *testing.T) {
	rec := newRecorder()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{Logger: Factory{Log: slog.New(rec)}.NewLogger("udpmux"), UDPConn: conn})
	t.Cleanup(func() { _ = mux.Close() })
	r := rec.find(t, "UDPMuxDefault should not listening")
	if r.Level != slog.LevelDebug {
		t.Errorf("%q logged at %v, want DEBUG", r.Message, r.Level)
	}
}

// TestICETCPCloseIsQuiet: a peer that closes its ICE-TCP connection, before
// sending anything or after its first STUN request, is a debug line.
func TestICETCPCloseIsQuiet(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		first      []byte // sent before closing; nil sends nothing
	}{
		{"closed before the first packet", "Error reading first packet from", nil},
		{"closed after a STUN request", "Failed to read streaming packet", stunBindingRequest("srv:viewer")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			mux := ice.NewTCPMuxDefault(ice.TCPMuxParams{
				Listener: ln, Logger: Factory{Log: slog.New(rec)}.NewLogger("tcpmux"), ReadBufferSize: 8,
			})
			t.Cleanup(func() { _ = mux.Close() })
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if tc.first != nil {
				// RFC 4571 framing: a 16-bit length, then the packet.
				frame := binary.BigEndian.AppendUint16(nil, uint16(len(tc.first)))
				if _, err := c.Write(append(frame, tc.first...)); err != nil {
					t.Fatal(err)
				}
			}
			_ = c.Close()
			r := rec.find(t, tc.want)
			if r.Level != slog.LevelDebug || !strings.HasSuffix(r.Message, ": EOF") {
				t.Errorf("%q logged at %v, want a DEBUG line ending in EOF", r.Message, r.Level)
			}
		})
	}
}

// stunBindingRequest is a STUN binding request (RFC 8489) carrying only a
// USERNAME, which is all pion's TCP mux reads before adding the connection.
func stunBindingRequest(username string) []byte {
	attr := binary.BigEndian.AppendUint16(nil, 0x0006) // USERNAME
	attr = binary.BigEndian.AppendUint16(attr, uint16(len(username)))
	attr = append(attr, username...)
	for len(attr)%4 != 0 {
		attr = append(attr, 0)
	}
	msg := binary.BigEndian.AppendUint16(nil, 0x0001) // Binding request
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(attr)))
	msg = binary.BigEndian.AppendUint32(msg, 0x2112A442) // magic cookie
	msg = append(msg, "srtwhep-test"...)                 // 12-byte transaction ID
	return append(msg, attr...)
}

// recorder is a slog.Handler at every level that hands records to the test.
type recorder struct{ ch chan slog.Record }

func newRecorder() *recorder { return &recorder{ch: make(chan slog.Record, 64)} }

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.ch <- r:
	default: // a test that logs more than it reads only loses the excess
	}
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

// find waits for the first record containing sub; pion logs from its own
// goroutines.
func (h *recorder) find(t *testing.T, sub string) slog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var seen []string
	for {
		select {
		case r := <-h.ch:
			if strings.Contains(r.Message, sub) {
				return r
			}
			seen = append(seen, r.Level.String()+" "+r.Message)
		case <-ctx.Done():
			t.Fatalf("pion never logged %q; it logged:\n%s", sub, strings.Join(seen, "\n"))
			return slog.Record{}
		}
	}
}
