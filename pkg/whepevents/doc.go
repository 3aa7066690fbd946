// The server-sent events extension of WHEP ("WHEP Core Extensions",
// webrtc-http-egress-events in the working group's repository): a viewer
// learns when its path's publisher comes and goes, how many watch, and
// when to move to another server, instead of guessing from stalled frames.
// The Link of every 201 names the session's SSE entry point; a POST there
// makes an event stream, a GET reads it as text/event-stream, a DELETE
// ends it, and it ends with its session. stream.go is one stream and its
// queue; http.go the HTTP side; watch.go turns the hub's path state into
// events.
//
// The WHEP server (pkg/whep) knows the extension only as a whep.Extension:
// the Link it adds to every 201 and the session ends it reports. The
// composition root mounts Handler in front of the WHEP handler and runs
// Run, the watcher, whose end ends every stream.
package whepevents
