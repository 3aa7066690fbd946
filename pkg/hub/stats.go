package hub

// PublisherStats is a snapshot of one publisher's path.
type PublisherStats struct {
	Readers       int    // counted (reserved or attached), not pending
	FramesIn      uint64 // video access units written
	BytesIn       uint64 // their NAL unit bytes
	AudioFramesIn uint64 // Opus frames written
	AudioBytesIn  uint64 // their bytes
	// FramesDropped counts every frame slow readers lost, departed readers
	// included; VideoFramesDropped and AudioFramesDropped split it by
	// kind (the metrics' kind="video"|"audio").
	FramesDropped      uint64
	VideoFramesDropped uint64
	AudioFramesDropped uint64
	// CongestedFramesDropped is the part of VideoFramesDropped dropped at
	// a sender's request because the viewer's link lost too much
	// (Reader.SkipToIDR), not because its queue was full.
	CongestedFramesDropped uint64
	PacketsOut             uint64 // sent to this path's readers, as their senders report
	BytesOut               uint64
}

// Stats reads the publisher's own path; no lookup by name. The counters
// are this publisher's share of its path's, so a snapshot never mixes two
// publishers of a path.
func (pub *Publisher) Stats() PublisherStats {
	if f := pub.final.Load(); f != nil {
		return *f
	}
	pub.h.mu.RLock()
	defer pub.h.mu.RUnlock()
	if f := pub.final.Load(); f != nil {
		return *f
	}
	return pub.p.counters().minus(pub.base)
}

// counters reads the slot's counters since it was created; Readers needs
// Hub.mu held.
func (p *path) counters() PublisherStats {
	// Read before the video drops it is part of (counted after them), so
	// a snapshot never has more congested drops than video drops.
	congested := p.congested.Load()
	video, audio := p.dropped[kindVideo].Load(), p.dropped[kindAudio].Load()
	return PublisherStats{
		Readers:                p.counted + p.extra,
		FramesIn:               p.framesIn.Load(),
		BytesIn:                p.bytesIn.Load(),
		AudioFramesIn:          p.audioFramesIn.Load(),
		AudioBytesIn:           p.audioBytesIn.Load(),
		FramesDropped:          video + audio,
		VideoFramesDropped:     video,
		AudioFramesDropped:     audio,
		CongestedFramesDropped: congested,
		PacketsOut:             p.packetsOut.Load(),
		BytesOut:               p.bytesOut.Load(),
	}
}

// minus is s counted from base on; Readers is s's.
func (s PublisherStats) minus(base PublisherStats) PublisherStats {
	s.FramesIn -= base.FramesIn
	s.BytesIn -= base.BytesIn
	s.AudioFramesIn -= base.AudioFramesIn
	s.AudioBytesIn -= base.AudioBytesIn
	s.FramesDropped -= base.FramesDropped
	s.VideoFramesDropped -= base.VideoFramesDropped
	s.AudioFramesDropped -= base.AudioFramesDropped
	s.CongestedFramesDropped -= base.CongestedFramesDropped
	s.PacketsOut -= base.PacketsOut
	s.BytesOut -= base.BytesOut
	return s
}
