package main

import (
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// silentSource is a UDP port that never answers SRT. It counts the
// caller sockets that tried it: each dial attempt is a new SRT socket,
// whose id is in every handshake packet it sends.
type silentSource struct {
	conn *net.UDPConn
	mu   sync.Mutex
	ids  map[uint32]bool
	done chan struct{}
}

func newSilentSource(t *testing.T) *silentSource {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &silentSource{conn: c, ids: map[uint32]bool{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 2048)
		for {
			n, _, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			// A handshake control packet (0x8000 type 0) carries the
			// sender's socket id at byte 40.
			if n >= 44 && buf[0] == 0x80 && buf[1] == 0x00 {
				s.mu.Lock()
				s.ids[binary.BigEndian.Uint32(buf[40:44])] = true
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-s.done })
	return s
}

func (s *silentSource) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// checkEveryFrame asserts a viewer got a decodable start and then every
// picture: no RTP sequence gap, no broken picture, and H.264 frame_num
// counting up without a skip. It judges frames, not their pace: a viewer
// joining an edge while the origin's cached GOP still streams in plays it
// faster than live, by design.
func checkEveryFrame(t *testing.T, name string, v *viewer) {
	t.Helper()
	aus := v.units()
	checkStartsWithIDR(t, name, aus)
	if st := v.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("%s: %d sequence gaps, %d broken pictures", name, st.SeqGaps, st.BrokenAUs)
	}
	skips, err := frameNumSkips(aus)
	// frame_num starts again at each IDR.
	skips = slices.DeleteFunc(skips, func(i int) bool { return aus[i].IDR })
	if err != nil || len(skips) != 0 {
		t.Errorf("%s: frame_num skips at pictures %v (%v)", name, skips, err)
	}
}

// arrivalDelays pairs the pictures two viewers both received live (by
// their slice bytes, which every hop passes through unchanged) and returns
// how much later each reached b than a, sorted. The first two seconds of
// each viewer are left out: their catch-up burst arrives early on purpose.
func arrivalDelays(a, b *viewer) []time.Duration {
	key := func(au whepclient.AccessUnit) string {
		for _, n := range au.NALUs {
			if t := h264.NALUType(n[0] & 0x1f); t == h264.NALUTypeIDR || t == h264.NALUTypeNonIDR {
				return string(n)
			}
		}
		return ""
	}
	live := func(aus []whepclient.AccessUnit) []whepclient.AccessUnit {
		if len(aus) == 0 {
			return nil
		}
		from := aus[0].Received.Add(2 * time.Second)
		for i, au := range aus {
			if au.Received.After(from) {
				return aus[i:]
			}
		}
		return nil
	}
	seen := map[string]time.Time{}
	for _, au := range live(a.units()) {
		seen[key(au)] = au.Received
	}
	var out []time.Duration
	for _, au := range live(b.units()) {
		if at, ok := seen[key(au)]; ok && key(au) != "" {
			out = append(out, au.Received.Sub(at))
		}
	}
	slices.Sort(out)
	return out
}
