package whep

import "github.com/srtwhep/srtwhep/pkg/av"

// The video-only test source never has audio: AttachAV is Attach. Audio
// tests use the real hub (HubSource).

func (r *testReader) HasAudio() bool { return false }

func (r *testReader) AttachAV() { r.Attach() }

// Info is unknown: the offer keeps Parse's H.264 choice.
func (r *testReader) Info() av.StreamInfo { return av.StreamInfo{} }
