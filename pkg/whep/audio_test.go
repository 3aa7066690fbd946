package whep

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// audioStep is 20 ms on the 90 kHz PTS clock; videoStep is one 30 fps
// frame. Every third video frame shares its PTS with an audio frame.
const (
	audioStep = 1800
	videoStep = 3000
)

// TestAudioAnswer checks the SDP answers: Opus sendonly in the BUNDLE with
// its own SSRC when offer and path both have audio, the audio section
// rejected (port 0) on a path without audio, no audio for a video-only
// offer.
func TestAudioAnswer(t *testing.T) {
	h := hub.New(hub.Config{})
	withAudio, err := h.Publish("live/av", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer withAudio.Close()
	withAudio.SetAudio(true)
	videoOnly, err := h.Publish("live/v", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer videoOnly.Close()
	url := startHubServer(t, h, nil)

	cases := []struct {
		name       string
		path       string
		offerAudio bool
		wantAudio  string // "", "answered" or "rejected"
	}{
		{"audio offer, audio path", "live/av", true, "answered"},
		{"audio offer, video-only path", "live/v", true, "rejected"},
		{"video-only offer, audio path", "live/av", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off := testkit.Offer(t, testkit.OfferOptions{Audio: c.offerAudio})
			resp, body := post(t, url+"/"+c.path+"/whep", "application/sdp", off.SDP)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q, want 201", resp.StatusCode, body)
			}
			var sd sdp.SessionDescription
			if err := sd.UnmarshalString(body); err != nil {
				t.Fatal(err)
			}
			var video, audio *sdp.MediaDescription
			for _, md := range sd.MediaDescriptions {
				switch md.MediaName.Media {
				case "video":
					video = md
				case "audio":
					audio = md
				}
			}
			if video == nil || video.MediaName.Port.Value == 0 {
				t.Fatalf("answer has no active video section:\n%s", body)
			}
			switch c.wantAudio {
			case "":
				if audio != nil {
					t.Fatalf("answer has an audio section for a video-only offer:\n%s", body)
				}
			case "rejected":
				if audio == nil || audio.MediaName.Port.Value != 0 {
					t.Fatalf("audio section not rejected with port 0:\n%s", body)
				}
			case "answered":
				if audio == nil || audio.MediaName.Port.Value == 0 {
					t.Fatalf("audio section missing or rejected:\n%s", body)
				}
				if f := audio.MediaName.Formats; len(f) != 1 || f[0] != "111" {
					t.Errorf("audio payload types %v, want exactly the offered Opus 111", f)
				}
				if rtpmap, _ := audio.Attribute("rtpmap"); rtpmap != "111 opus/48000/2" {
					t.Errorf("audio rtpmap %q, want 111 opus/48000/2", rtpmap)
				}
				for _, a := range []string{"sendonly", "rtcp-mux"} {
					if _, ok := audio.Attribute(a); !ok {
						t.Errorf("audio section lacks a=%s", a)
					}
				}
				vmid, _ := video.Attribute("mid")
				amid, _ := audio.Attribute("mid")
				if g, _ := sd.Attribute("group"); g != "BUNDLE "+vmid+" "+amid {
					t.Errorf("group %q, want video and audio BUNDLEd (mids %s, %s)", g, vmid, amid)
				}
				vssrc, _ := video.Attribute("ssrc")
				assrc, _ := audio.Attribute("ssrc")
				vs, _, _ := strings.Cut(vssrc, " ")
				as, _, _ := strings.Cut(assrc, " ")
				if vs == "" || as == "" || vs == as {
					t.Errorf("SSRCs video %q audio %q, want two distinct ones", vs, as)
				}
			}
			if err := off.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: body}); err != nil {
				t.Errorf("the offerer rejects the answer: %v", err)
			}
		})
	}
}

// TestAudioPlayback: a viewer joining mid-GOP gets the cached GOP with its
// audio from the IDR's PTS on, then live frames; every Opus packet carries
// its frame's PTS on the 48 kHz clock; and the two tracks' sender reports
// place a video frame and the audio frame of equal PTS at the same NTP
// time (within 1 ms, rounding included). Viewers without audio (by offer
// or by path) still play video.
func TestAudioPlayback(t *testing.T) {
	clip := makeClip(t, 90, 30)
	c := newAVClip(t, clip)
	h := hub.New(hub.Config{})
	pub := publishAV(t, h)
	url := startHubServer(t, h, nil)

	// Up to the middle of the second GOP, before anyone watches.
	half := 0
	for c.frames[half].pts() < 45*videoStep {
		c.frames[half].writeTo(pub)
		half++
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	viewer := dialAV(t, ctx, url+"/live/av/whep", true)
	noAudio := dialAV(t, ctx, url+"/live/av/whep", false)
	waitAttached(t, h, 2)
	// Then most of the rest at once: the viewers are behind the live edge
	// until their writers drain it, which the last frame of this part
	// tells. The frames after it go out live.
	rest := half
	for c.frames[rest].pts() < 75*videoStep {
		c.frames[rest].writeTo(pub)
		rest++
	}
	caughtUp := c.frames[rest-1].a.PTS
	testkit.WaitFor(t, 20*time.Second, "the viewer at the live edge", func() bool {
		_, audio := viewer.received(t, c)
		return len(audio) > 0 && audio[len(audio)-1] == caughtUp
	})
	for _, f := range c.frames[rest:] {
		f.writeTo(pub)
	}
	lastVideo := int64((len(clip) - 1) * videoStep)
	lastAudio := c.frames[len(c.frames)-1].a.PTS
	testkit.WaitFor(t, 20*time.Second, "the last frames and both sender reports", func() bool {
		video, audio := viewer.received(t, c)
		_, okV := viewer.sess.SenderReport(webrtc.RTPCodecTypeVideo)
		_, okA := viewer.sess.SenderReport(webrtc.RTPCodecTypeAudio)
		return len(video) > 0 && video[len(video)-1] == lastVideo &&
			len(audio) > 0 && audio[len(audio)-1] == lastAudio && okV && okA
	})

	video, audio := viewer.received(t, c)
	// The cached GOP starts at the IDR of frame 30; its audio at the same PTS.
	if video[0] != 30*videoStep || audio[0] != 30*videoStep {
		t.Errorf("first video PTS %d, first audio PTS %d; want both %d (the cached IDR)", video[0], audio[0], 30*videoStep)
	}
	for i := 1; i < len(audio); i++ {
		if audio[i] != audio[i-1]+audioStep {
			t.Fatalf("audio PTS %d after %d: want every frame once, in order", audio[i], audio[i-1])
		}
	}
	for i := 1; i < len(video); i++ {
		if video[i] != video[i-1]+videoStep {
			t.Fatalf("video PTS %d after %d: want every frame once, in order", video[i], video[i-1])
		}
	}

	viewer.mu.Lock()
	aus, pkts := viewer.aus, viewer.audio
	viewer.mu.Unlock()
	for i, p := range pkts {
		if p.PayloadType != 111 {
			t.Fatalf("audio payload type %d, want the offered 111", p.PayloadType)
		}
		if i > 0 {
			want := uint32((audio[i] - audio[0]) * av.OpusClockRate / av.ClockRate)
			if got := p.RTPTimestamp - pkts[0].RTPTimestamp; got != want {
				t.Fatalf("audio packet %d: RTP timestamp %d after the first, want %d (its PTS on the 48 kHz clock)", i, got, want)
			}
		}
	}

	// Lip sync, as a receiver computes it: each track's RTP time through
	// its own latest sender report. Frames from 75 on went out live, so
	// their timestamps are on the PTS timeline the reports describe.
	srV, _ := viewer.sess.SenderReport(webrtc.RTPCodecTypeVideo)
	srA, _ := viewer.sess.SenderReport(webrtc.RTPCodecTypeAudio)
	if srV.SSRC == srA.SSRC {
		t.Errorf("both tracks report SSRC %d", srV.SSRC)
	}
	audioTS := map[int64]uint32{}
	for i, pts := range audio {
		audioTS[pts] = pkts[i].RTPTimestamp
	}
	compared := 0
	for i, pts := range video {
		ts, ok := audioTS[pts]
		if pts < 75*videoStep || !ok {
			continue
		}
		compared++
		tv, ta := srV.At(aus[i].RTPTimestamp), srA.At(ts)
		if d := tv.Sub(ta); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("PTS %d: video and audio land %v apart on the sender-report clock (video %v, audio %v), want within 1 ms",
				pts, d, tv, ta)
		}
	}
	if compared < 4 {
		t.Errorf("compared %d live frame pairs of equal PTS, want at least 4", compared)
	}

	// The viewer that offered no audio got the same video and no audio.
	nv, _ := noAudio.received(t, c)
	if len(nv) == 0 || nv[0] != 30*videoStep {
		t.Errorf("video-only viewer: first video PTS %v, want %d", nv[:min(len(nv), 1)], 30*videoStep)
	}
	if st := noAudio.sess.Stats(); st.AudioPackets != 0 {
		t.Errorf("video-only viewer received %d audio packets", st.AudioPackets)
	}
	if st := pub.Stats(); st.AudioFramesDropped != 0 || st.VideoFramesDropped != 0 {
		t.Errorf("drops video %d audio %d, want none", st.VideoFramesDropped, st.AudioFramesDropped)
	}
}

// TestAudioOfferOnVideoOnlyPath: the audio section is rejected and the
// viewer plays video.
func TestAudioOfferOnVideoOnlyPath(t *testing.T) {
	clip := makeClip(t, 30, 30)
	h := hub.New(hub.Config{})
	pub, err := h.Publish("live/v", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	url := startHubServer(t, h, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	viewer := dialAV(t, ctx, url+"/live/v/whep", true)
	waitAttached(t, h, 1)
	for i, au := range clip {
		a := *au
		a.PTS = int64(i * videoStep)
		pub.Write(&a)
	}
	testkit.WaitFor(t, 20*time.Second, "30 decoded access units", func() bool {
		return viewer.sess.Stats().DecodedAUs >= 30
	})
	if st := viewer.sess.Stats(); st.AudioPackets != 0 || st.SeqGaps != 0 {
		t.Errorf("audio packets %d, sequence gaps %d; want 0, 0", st.AudioPackets, st.SeqGaps)
	}
}
