//go:build linux

package mediaplane

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// packetsOfSizes stamps one packet per payload size, with payload bytes
// that tell the packets apart.
func packetsOfSizes(ssrc uint32, sizes ...int) []rtp.Packet {
	pkts := make([]rtp.Packet, len(sizes))
	for i, n := range sizes {
		pkts[i] = rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 102, SequenceNumber: uint16(i), Timestamp: 90,
			SSRC: ssrc, Marker: i == len(sizes)-1}, Payload: fill(byte(i), n, i)}
	}
	return pkts
}

// expectDatagrams waits for pkts at s, each decrypting with dec to the
// packet sent, in order.
func expectDatagrams(t *testing.T, s *sink, dec *srtp.Context, pkts []rtp.Packet) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%d datagrams", len(pkts)), func() bool {
		return int(s.count.Load()) >= len(pkts)
	})
	got := s.datagrams()
	if len(got) != len(pkts) {
		t.Fatalf("%d datagrams, want %d", len(got), len(pkts))
	}
	for i, d := range got {
		var h rtp.Header
		plain, err := dec.DecryptRTP(nil, d, &h)
		if err != nil {
			t.Fatalf("datagram %d (%d bytes): %v", i, len(d), err)
		}
		if h.SequenceNumber != pkts[i].SequenceNumber || h.Marker != pkts[i].Marker ||
			!bytes.Equal(plain[h.MarshalSize():], pkts[i].Payload) {
			t.Fatalf("datagram %d is seq %d with %d payload bytes, want %s", i, h.SequenceNumber, len(plain)-h.MarshalSize(), describe(&pkts[i]))
		}
	}
}

// TestSenderGSO: a frame leaves as as few GSO messages as UDP_SEGMENT
// allows (equal segments, a shorter one only last, at most 64 KiB), and
// the receiver still gets every packet as its own datagram, in order.
func TestSenderGSO(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		t.Run(profile.String(), func(t *testing.T) {
			srv, _ := newServer(t, nil)
			s := newSink(t, true)
			v, dec := keyedViewer(t, srv, s.addr(), profile)
			snd := srv.NewSender(0)
			// Runs: five full packets and a short one; three full; a
			// larger one and a short one.
			pkts := packetsOfSizes(v.VideoSSRC(), 1200, 1200, 1200, 1200, 1200, 700, 1200, 1200, 1200, 1300, 100)
			if err := snd.SendFrame(v, pkts); err != nil {
				t.Fatal(err)
			}
			expectDatagrams(t, s, dec, pkts)
			st := srv.Stats()
			if !srv.gso.Load() {
				t.Skip("this kernel refused UDP GSO; the plain path was used")
			}
			if st.Messages != 3 || st.Syscalls != 1 || st.PacketsSent != 11 || st.SendErrors != 0 {
				t.Errorf("stats %+v, want 11 packets in 3 messages, 1 call", st)
			}
			if vs := v.Stats(); vs.PacketsSent != 11 {
				t.Errorf("viewer stats %+v", vs)
			}
		})
	}
}

// TestSenderLimits: a frame larger than one GSO message (64 KiB) and
// larger than the Sender's capacity still leaves whole and in order.
func TestSenderLimits(t *testing.T) {
	srv, _ := newServer(t, nil)
	s := newSink(t, true)
	v, dec := keyedViewer(t, srv, s.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	sizes := make([]int, 70)
	for i := range sizes {
		sizes[i] = 1200
	}
	pkts := packetsOfSizes(v.VideoSSRC(), sizes...)
	snd := srv.NewSender(64)
	if err := snd.SendFrame(v, pkts); err != nil {
		t.Fatal(err)
	}
	expectDatagrams(t, s, dec, pkts)
	st := srv.Stats()
	// 1,228 bytes a segment: 52 fit in 64 KiB; the 64-slot capacity
	// flushes once in the middle.
	if srv.gso.Load() && (st.Messages != 3 || st.Syscalls != 2) {
		t.Errorf("stats %+v, want 3 messages (52+12, then 6) in 2 calls", st)
	}
	if err := snd.SendFrame(v, packetsOfSizes(v.VideoSSRC(), MaxPayload+1)); err == nil {
		t.Error("a payload over MaxPayload was accepted")
	}
}

// TestSenderPlainFallback: where the kernel refuses GSO, queued messages
// are split into one datagram each and sent again.
func TestSenderPlainFallback(t *testing.T) {
	srv, _ := newServer(t, nil)
	s := newSink(t, true)
	v, dec := keyedViewer(t, srv, s.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	pkts := packetsOfSizes(v.VideoSSRC(), 1200, 1200, 1200, 500, 1200, 1200)
	snd := srv.NewSender(0)
	if err := snd.Queue(v, pkts); err != nil {
		t.Fatal(err)
	}
	snd.split(0) // what flush does when the kernel answers EIO
	if err := snd.Flush(); err != nil {
		t.Fatal(err)
	}
	expectDatagrams(t, s, dec, pkts)
	if st := srv.Stats(); st.Messages != uint64(len(pkts)) {
		t.Errorf("%d messages after the split, want %d", st.Messages, len(pkts))
	}
}

// TestSenderRTCPInBatch: a sender report queued between frames leaves in
// the same sendmmsg as the frames, as a datagram of its own that the
// viewer decrypts as SRTCP.
func TestSenderRTCPInBatch(t *testing.T) {
	srv, _ := newServer(t, nil)
	s := newSink(t, true)
	v, dec := keyedViewer(t, srv, s.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	snd := srv.NewSender(0)
	pkts := packetsOfSizes(v.VideoSSRC(), 1200, 1200, 700)
	sr := &rtcp.SenderReport{SSRC: v.VideoSSRC(), NTPTime: 0xe1234567_89abcdef, RTPTime: 90, PacketCount: 3, OctetCount: 3100}
	if err := snd.Queue(v, pkts); err != nil {
		t.Fatal(err)
	}
	if err := snd.QueueRTCP(v, []rtcp.Packet{sr}); err != nil {
		t.Fatal(err)
	}
	if err := snd.Queue(v, pkts[:1]); err != nil {
		t.Fatal(err)
	}
	if err := snd.Flush(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "5 datagrams", func() bool { return s.count.Load() >= 5 })
	got := s.datagrams()
	if len(got) != 5 {
		t.Fatalf("%d datagrams, want 5", len(got))
	}
	plain, err := dec.DecryptRTCP(nil, got[3], nil)
	if err != nil {
		t.Fatalf("datagram 4 is not the SRTCP report: %v", err)
	}
	back, err := rtcp.Unmarshal(plain)
	if err != nil || len(back) != 1 {
		t.Fatalf("report: %v, %d packets", err, len(back))
	}
	if rep, ok := back[0].(*rtcp.SenderReport); !ok || rep.SSRC != sr.SSRC || rep.NTPTime != sr.NTPTime || rep.RTPTime != sr.RTPTime || rep.OctetCount != sr.OctetCount {
		t.Fatalf("report %+v, want %+v", back[0], sr)
	}
	for _, i := range []int{0, 1, 2, 4} {
		if _, err := dec.DecryptRTP(nil, got[i], nil); err != nil {
			t.Fatalf("datagram %d: %v", i+1, err)
		}
	}
	if st := srv.Stats(); st.Syscalls != 1 {
		t.Errorf("stats %+v: want frames and report in one sendmmsg", st)
	}
}
