package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/pion/sdp/v3"
)

// maxAnswer bounds the SDP answer the tap keeps, like whepclient does.
const maxAnswer = 1 << 20

// answerTap hands the body of the WHEP POST's 201 (the SDP answer) to
// onAnswer before whepclient reads it. whepclient does not expose the
// answer, and the light receive path needs it: only the answer says which
// payload types the server's audio uses, and it arrives before any media
// can, so the reactor knows the kinds from the first packet.
type answerTap struct {
	base     http.RoundTripper
	onAnswer func([]byte)
}

func (t *answerTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || resp.StatusCode != http.StatusCreated {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("loadgen: read SDP answer: %w", err)
	}
	t.onAnswer(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// answeredAudio returns the payload types of the first accepted audio
// m-section of an SDP answer; ok is false when the answer has none (no
// audio offered, the path has no audio, or the section was rejected with
// port 0).
func answeredAudio(answer []byte) (pts []uint8, ok bool, err error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(string(answer)); err != nil {
		return nil, false, fmt.Errorf("loadgen: parse SDP answer: %w", err)
	}
	for _, md := range sd.MediaDescriptions {
		if md.MediaName.Media != "audio" || md.MediaName.Port.Value == 0 {
			continue
		}
		for _, f := range md.MediaName.Formats {
			if pt, err := strconv.ParseUint(f, 10, 7); err == nil {
				pts = append(pts, uint8(pt))
			}
		}
		return pts, len(pts) > 0, nil
	}
	return nil, false, nil
}

// learnAnswer records the answer's audio payload types in c.
func (c *counters) learnAnswer(answer []byte) error {
	pts, ok, err := answeredAudio(answer)
	if err != nil {
		return err
	}
	for _, pt := range pts {
		c.audioPT.add(pt)
	}
	c.audioAnswered.Store(ok)
	return nil
}
