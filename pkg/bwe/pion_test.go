package bwe

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// pionTCCURI is the extension pion's estimator looks for.
const pionTCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

// replayPion runs pion/interceptor's GCC (SendSideBWE, without a pacer)
// over a trace. It reads the wall clock, so it runs in a synctest bubble
// whose clock the replay moves: the trace's 20 s take no real time and
// every run is the same.
func replayPion(t *testing.T, evs []event, initial int) []sample {
	var out []sample
	synctest.Test(t, func(t *testing.T) {
		est, w := newPion(t, initial)
		defer est.Close()
		start := time.Now()
		payload := make([]byte, 1500)
		for _, ev := range evs {
			if d := ev.at - time.Since(start); d > 0 {
				time.Sleep(d)
			}
			if ev.fb == nil {
				h := rtp.Header{Version: 2, SSRC: 1, SequenceNumber: ev.seq}
				ext, _ := (&rtp.TransportCCExtension{TransportSequence: ev.seq}).Marshal()
				_ = h.SetExtension(3, ext)
				if _, err := w.Write(&h, payload[:ev.size-h.MarshalSize()], interceptor.Attributes{}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := est.WriteRTCP([]rtcp.Packet{ev.fb}, nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // pion's delay controller works on goroutines of its own
			out = append(out, sample{ev.at, Estimate{Bitrate: int64(est.GetTargetBitrate())}})
		}
	})
	return out
}

// newPion is pion's estimator for one stream whose packets carry the
// transport-wide number with extension ID 3, and the writer its sends go
// through; there is no pacer, and the writer sends nowhere.
func newPion(tb testing.TB, initial int) (*gcc.SendSideBWE, interceptor.RTPWriter) {
	est, err := gcc.NewSendSideBWE(gcc.SendSideBWEInitialBitrate(initial), gcc.SendSideBWEPacer(gcc.NewNoOpPacer()))
	if err != nil {
		tb.Fatal(err)
	}
	w := est.AddStream(&interceptor.StreamInfo{SSRC: 1,
		RTPHeaderExtensions: []interceptor.RTPHeaderExtension{{URI: pionTCCURI, ID: 3}}},
		interceptor.RTPWriterFunc(func(_ *rtp.Header, p []byte, _ interceptor.Attributes) (int, error) { return len(p), nil }))
	return est, w
}

// TestAgainstPion runs pion's GCC on the same feedback as ours and
// checks that both see the same things at the same time: no cut on the
// steady link or under random loss, the drop of the link within a second
// of each other, growth once it recovers. Their levels differ by design,
// and are logged side by side. pion's estimator is built for a sender
// that follows it, which a live stream server does not: under a link
// that stays narrower than the stream its loss controller cuts again at
// every report, down to its floor, and on a link with headroom it grows
// without the 1.5 times received rate cap; after the link recovers it
// ramps by 8 % a second from its floor where ours follows what the link
// now delivers (the stream is a continuous probe).
func TestAgainstPion(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			evs := trace(sc.link(), 2.5*mbit, 20*time.Second)
			ours := replay(evs, 40*time.Millisecond)
			theirs := replayPion(t, evs, 2.5*mbit)
			for sec := time.Second; sec <= 20*time.Second; sec += time.Second {
				t.Logf("%5v ours %8d  pion %8d", sec, at(ours, sec).Bitrate, at(theirs, sec).Bitrate)
			}
			switch sc.name {
			case "step down":
				o, p := firstBelow(ours, 10*time.Second, 1.2*mbit), firstBelow(theirs, 10*time.Second, 1.2*mbit)
				t.Logf("below 1.2 Mbit/s after the drop at 10 s: ours at %v, pion at %v", o, p)
				if o < 0 || p < 0 || o-p > time.Second || p-o > time.Second {
					t.Errorf("ours fell below 1.2 Mbit/s at %v, pion at %v; want both, within a second of each other", o, p)
				}
			case "step up":
				before, after := at(theirs, 10*time.Second).Bitrate, at(theirs, 20*time.Second).Bitrate
				if before >= 1.2*mbit || after < before*5/4 {
					t.Errorf("pion: %d on the 1 Mbit/s link, %d 10 s after it rose; want < 1.2 Mbit/s, then growing", before, after)
				}
			default:
				sc.check(t, theirs)
			}
		})
	}
}

// firstBelow is when an estimate (not "none yet") first fell below
// level after from; -1 if never.
func firstBelow(s []sample, from time.Duration, level int64) time.Duration {
	for _, x := range s {
		if x.at > from && x.est.Bitrate > 0 && x.est.Bitrate < level {
			return x.at
		}
	}
	return -1
}
