// The bench tooling (whep-loadgen and its packages), a module of its own so
// the server's module neither builds nor waits on it. It measures the server
// in this checkout: the replace below, and the import path under the
// server's, which lets it use the server's internal packages (mmsg,
// whepclient, rtpseq, procstart, testkit).
module github.com/srtwhep/srtwhep/bench

go 1.26.8

require (
	github.com/pion/ice/v4 v4.4.8
	github.com/pion/logging v0.2.4
	github.com/pion/rtcp v1.2.20
	github.com/pion/sdp/v3 v3.0.20
	github.com/pion/webrtc/v4 v4.2.26
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/procfs v0.22.0
	github.com/srtwhep/srtwhep v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/asticode/go-astikit v0.42.0 // indirect
	github.com/asticode/go-astits v1.13.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bluenviron/mediacommon/v2 v2.5.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/haivision/srtgo v0.0.0-20230627061225-a70d53fcd618 // indirect
	github.com/mattn/go-pointer v0.0.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pion/datachannel v1.6.3 // indirect
	github.com/pion/dtls/v3 v3.1.15 // indirect
	github.com/pion/interceptor v0.1.51 // indirect
	github.com/pion/mdns/v2 v2.2.2 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/rtp v1.10.6 // indirect
	github.com/pion/sctp v1.12.0 // indirect
	github.com/pion/srtp/v3 v3.1.3 // indirect
	github.com/pion/stun/v4 v4.0.1 // indirect
	github.com/pion/transport/v5 v5.1.4 // indirect
	github.com/pion/turn/v5 v5.1.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/wlynxg/anet v0.0.5 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/hraban/opus.v2 v2.0.0-20230925203106-0188a62cb302 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/srtwhep/srtwhep => ../

// The server binary that internal/loadgen's tests run against is built from
// this module (testkit.BuildBinary), so its requirements must be here too.
tool github.com/srtwhep/srtwhep/cmd/srtwhep
