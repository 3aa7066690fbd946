package av

// Audio travels in two forms: as coded in the MPEG-TS (AudioTrack and
// AudioUnit, from tsdemux to the transcoder) and as Opus for WebRTC
// (AudioFrame, from the transcoder to the hub). All PTS values are on the
// demuxer's 90 kHz clock, the same clock as AccessUnit.PTS, so lip sync is
// a subtraction and never a guess.

// OpusClockRate is the RTP clock of Opus (RFC 7587): always 48 kHz, whatever
// rate the encoder ran at internally.
const OpusClockRate = 48000

// AudioCodec names an audio coding format read from MPEG-TS.
type AudioCodec int

// Audio codecs tsdemux reads. AAC in LATM is delivered as AudioCodecAAC:
// tsdemux unpacks the LATM framing, so consumers see one kind of AAC.
const (
	AudioCodecUnknown AudioCodec = iota
	AudioCodecAAC                // MPEG-4 AAC, raw access units (no ADTS/LATM framing)
	AudioCodecMPEG1              // MPEG-1/2 audio layer II or III, whole frames with headers
	AudioCodecOpus               // Opus packets (RFC 6716), unframed
)

func (c AudioCodec) String() string {
	switch c {
	case AudioCodecAAC:
		return "AAC"
	case AudioCodecMPEG1:
		return "MPEG-1 Audio"
	case AudioCodecOpus:
		return "Opus"
	}
	return "unknown"
}

// AudioTrack describes the audio track a publisher sends.
type AudioTrack struct {
	Codec      AudioCodec
	SampleRate int // Hz as coded (for Opus always 48000)
	Channels   int
	// Layer is 2 or 3 for AudioCodecMPEG1, else 0.
	Layer int
	// Config is the AAC AudioSpecificConfig (ISO 14496-3 1.6.2.1) for
	// AudioCodecAAC, which a decoder needs as extradata; nil otherwise.
	Config []byte
}

// AudioUnit is one coded audio frame as read from the TS: one AAC access
// unit, one MPEG audio frame or one Opus packet.
type AudioUnit struct {
	// PTS is on the 90 kHz clock of AccessUnit.PTS (unwrapped, same origin).
	PTS  int64
	Data []byte
	// Track describes the coding for readers that pass units on as they
	// came (SRT readers remux them into MPEG-TS): the ingest sets it
	// before a unit reaches the hub; the demuxer leaves it nil. Units of
	// one track share the pointer and it is immutable, like the unit once
	// handed to the hub.
	Track *AudioTrack
}

// AudioFrame is one Opus packet ready for RTP. Like AccessUnit it is
// immutable once handed on: readers share it.
type AudioFrame struct {
	// PTS is on the 90 kHz clock of AccessUnit.PTS. The RTP timestamp of
	// the Opus track is PTS·48000/90000 plus the track's own offset.
	PTS int64
	// Duration is in 48 kHz samples (960 for the 20 ms frames we encode).
	Duration int
	Data     []byte
}
