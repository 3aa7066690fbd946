package whep

// The video-only test source never has audio: AttachAV is Attach. Audio
// tests use the real hub (HubSource).

func (r *testReader) HasAudio() bool { return false }

func (r *testReader) AttachAV() { r.Attach() }
