// Package mediaplane is the WebRTC transport of send-only viewers, owned
// end to end: one UDP socket for every viewer, an ICE-lite responder, a
// DTLS handshake that yields SRTP keys, and a send path that encrypts a
// viewer's frame into a buffer it owns and hands it to the kernel as one
// UDP GSO message. Plane (plane.go) is the package as the WHEP server uses
// it: a Server on the shared socket, the answer's host addresses
// (HostIPs, the one enumeration of them), and the writer pool that steps
// the viewers' senders.
//
// pion/webrtc gives every viewer a PeerConnection: about 27 goroutines, and
// on every packet a TrackLocal → SRTP session → ICE conn → UDP mux chain
// with a lock, an interface call and a clock read at each step. A WHEP
// server only sends, so most of that machinery has nothing to do. Here pion
// does what it is good at (pion/stun parses and signs STUN, pion/dtls runs
// the handshake, pion/srtp encrypts, pion/sdp and pion/ice write the
// answer) and this package owns the per-packet path and the goroutines.
//
// # Goroutines
//
// New starts nothing; Start starts them and Close ends them. A Server runs
// two: the demultiplexer, which reads the socket in batches
// (recvmmsg) and dispatches every datagram by its first byte (RFC 7983:
// STUN 0–3, DTLS 20–63, RTP/RTCP 128–191) and its remote address, and a
// janitor that ends viewers whose handshake or consent ran out; with
// Config.TCPListener, a third accepts ICE-TCP connections (RFC 6544,
// passive), and each connection has one reading its RFC 4571 frames into
// the same dispatch, so a viewer on ICE-TCP costs one goroutine while it
// is connected. A UDP viewer owns no goroutine once connected. While it
// shakes hands, one goroutine
// drives pion/dtls, which adds two of its own (its handshake state machine
// and its read loop; the read loop also starts a short-lived deadline
// watcher per read).
//
// pion/dtls v3 keeps both of its goroutines until the Conn is closed, and
// closing it sends close_notify. So once the keys are exported the
// handshake goroutine "detaches": it closes the Conn while the Conn's
// packet adapter captures what the Conn writes instead of sending it. The
// capture is the encrypted close_notify record, kept to be sent when the
// viewer really ends; the adapter also keeps the handshake's last flight
// (ChangeCipherSpec and Finished), which the demultiplexer sends again if
// the viewer retransmits its own last flight because ours was lost. After
// that the viewer's DTLS needs no live state: a WebRTC viewer sends no
// application data over DTLS, and any alert it sends means it is leaving.
//
// # Sending
//
// A Sender belongs to one goroutine. Queue stamps nothing itself: it takes
// the RTP packets a caller stamped (rtpstamp.Stamper shares one payload
// buffer among all viewers), writes each header and payload into a slot of
// the Sender's buffer, encrypts it there in place, and groups the frame's
// packets into UDP GSO messages (equal segment sizes, the last may be
// shorter); Flush sends every queued message of every viewer with one
// sendmmsg. Where the kernel refuses GSO, the same messages go out one
// datagram each. An ICE-TCP viewer's packets go out as RFC 4571 frames
// with one writev per frame, which blocks while its link is full: the
// back-pressure a per-viewer writer wants. There is no clock read, channel or interface call per
// packet, and one lock per viewer per frame (the viewer's SRTP context is
// shared with RTCP writes). UDP sends bypass net's per-socket write lock
// (see sendDirect): hundreds of session writers queued on it made convoys
// that paused groups of viewers for 200 ms and more.
//
// # The writer pool
//
// Plane.Start adds a fixed set of workers (as many as CPUs, at least two)
// and one pacer goroutine; a connected UDP viewer still owns none. Each
// viewer's sender (a plane.Stepper, pkg/rtpsend) is a job: its reader's
// queued frames, its NACKs and its session's end wake it, a worker takes
// up to 64 ready jobs, steps each into the worker's Sender and sends the
// whole batch with as few sendmmsg calls as it fits in, so the system
// calls per frame fall from one per viewer to one per batch when many
// viewers watch one path. A job waiting out its catch-up pacing is woken
// by the pacer (one timer heap for the pool, not a timer per viewer). A
// viewer over ICE-TCP, whose writev blocks while its link is full, is
// stepped on a goroutine of its own instead (plane.Run), from the start
// or from the step that finds an ICE restart moved it there.
//
// # ICE
//
// The answer says ice-lite and the Server answers checks, but before the
// viewer nominates it also sends one check of its own back on the pair, as
// a full agent's triggered check: a controlling agent with regular
// nomination (pion) then nominates at once instead of at its next check
// tick, which took 200 ms off every viewer's first packet.
//
// Media goes only where it is wanted (consent.go, RFC 7675): a nomination
// moves media only to an address that has answered one of our own checks,
// since a viewer can forge its checks and SRTCP from any source address
// but cannot receive at one that is not its own. The janitor sends every
// viewer's periodic consent check, so consent costs no goroutine.
package mediaplane
