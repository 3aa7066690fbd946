package config

// The settings of one path (paths and pathDefaults).

// Path holds the per-path settings. Zero MaxReaders means unlimited; an
// empty Passphrase falls back to SRT.Passphrase; empty credentials mean
// anyone may publish; empty ReadTokens mean anyone may watch; empty IP
// lists allow every address.
type Path struct {
	MaxReaders  int      `yaml:"maxReaders" reload:"live"`
	Passphrase  string   `yaml:"passphrase" reload:"live"`
	PublishUser string   `yaml:"publishUser" reload:"live"`
	PublishPass string   `yaml:"publishPass" reload:"live"`
	ReadTokens  []string `yaml:"readTokens" reload:"live"`
	PublishIPs  []string `yaml:"publishIPs" reload:"live"`
	ReadIPs     []string `yaml:"readIPs" reload:"live"`
	// Audio is "auto" (Opus passes through; AAC and MPEG audio are
	// transcoded to Opus once per path) or "off" (video only).
	Audio string `yaml:"audio" reload:"live"`
	// AudioBitrate is the Opus bitrate of transcoded audio, in bit/s.
	AudioBitrate int `yaml:"audioBitrate" reload:"live"`
	// Video is "auto" (passthrough when viewers can play the stream as
	// published; otherwise transcoded once per path to H.264 a browser
	// plays; an H.265 path keeps passthrough for the viewers that offered
	// H.265 and transcodes only for the others), "passthrough" (never
	// transcode: B-frames are refused with the fix) or "transcode"
	// (always, from the first IDR).
	Video string `yaml:"video" reload:"live"`
	// MaxKeyframeInterval is the longest keyframe interval auto passes
	// through: a longer GOP makes a joining viewer wait for its start, so
	// the path is transcoded to a 2 s GOP instead.
	MaxKeyframeInterval Duration `yaml:"maxKeyframeInterval" reload:"live"`
	// Renditions is the path's ladder of lower renditions for viewers on
	// weak links: auto, off or a list (renditions.go). A rung is
	// transcoded only while a viewer watches it.
	Renditions Renditions `yaml:"renditions" reload:"live"`
	// OverridePublisher says who may take a busy path over (an encoder
	// reconnecting after a blip must not wait until the server notices
	// that its old connection died, and a stranger who knows the path
	// name must not take it): see Takeover.
	OverridePublisher Takeover `yaml:"overridePublisher" reload:"live"`
	// PublisherGrace is how long viewers stay attached after the publisher
	// left; the next publisher continues their sessions.
	PublisherGrace Duration `yaml:"publisherGrace" reload:"live"`
	// Source makes the path an edge of another SRT server (an origin, or
	// another edge): srt://HOST:PORT[?passphrase=…&latency=…], pulled as
	// read:PATH when a viewer asks and nobody publishes here. "" = none.
	Source string `yaml:"source" reload:"live"`
	// SourceTimeout is how long a viewer's request waits for the source's
	// first keyframe.
	SourceTimeout Duration `yaml:"sourceTimeout" reload:"live"`
	// SourceLinger keeps a pull open this long after its last viewer left,
	// so a page reload does not reconnect to the source.
	SourceLinger Duration `yaml:"sourceLinger" reload:"live"`
	// MaxUnitBytes caps one access unit (PES) being assembled from the
	// publisher's TS; past it the unit is dropped up to the next unit
	// start, so a stream that never ends one cannot grow memory.
	MaxUnitBytes int `yaml:"maxUnitBytes" reload:"live"`
	// GOPCacheDuration and GOPCacheBytes bound the last-GOP cache that
	// lets a new viewer start at once; a GOP beyond either is not cached
	// past that point, and viewers joining it wait for the next IDR.
	GOPCacheDuration Duration `yaml:"gopCacheDuration" reload:"live"`
	GOPCacheBytes    int      `yaml:"gopCacheBytes" reload:"live"`
}

// The values of a path's audio key.
const (
	AudioAuto = "auto"
	AudioOff  = "off"
)

// The values of a path's video key.
const (
	VideoAuto        = "auto"
	VideoPassthrough = "passthrough"
	VideoTranscode   = "transcode"
)

// PathConfig returns the settings of one path: its entry under paths (whose
// unset keys were filled from pathDefaults when the file was decoded) or
// pathDefaults when the path is not listed.
func (c *Config) PathConfig(path string) Path {
	if p, ok := c.Paths[path]; ok {
		return p
	}
	return c.PathDefaults
}
