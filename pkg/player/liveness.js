// Liveness of the srtwhep player's stream: the page tells a stalled picture
// from a playing one, and notices at once when the server ends the
// session. It shares one function scope with whep.js and player.js (the
// page inlines them in that order) and uses player.js's state.

const INTERRUPTED = "Stream interrupted — waiting for the publisher";

// watchFrames follows the attempt's frames after the first one: a stall
// says the stream is interrupted (the server keeps the session through a
// publisher's restart, so the picture simply stops), and the next frame
// says it plays again. requestVideoFrameCallback reports every frame shown;
// without it, currentTime moving on is the sign of frames.
function watchFrames(att) {
  if (att.watch) return;
  const watch = frameWatch(STALL_MS);
  att.watch = watch;
  const onFrame = () => {
    if (cur !== att) return;
    if (watch.frame(performance.now()) === "resumed") {
      failures = 0;
      setStatus("playing", "Playing");
    }
    playedSince404 = true;
  };
  if (typeof video.requestVideoFrameCallback === "function") {
    const next = () => video.requestVideoFrameCallback(() => {
      if (cur !== att) return;
      onFrame();
      next();
    });
    next();
  }
  let lastTime = video.currentTime;
  att.watchTimer = setInterval(() => {
    if (cur !== att) return;
    const now = performance.now();
    if (typeof video.requestVideoFrameCallback !== "function" && video.currentTime !== lastTime) {
      lastTime = video.currentTime;
      onFrame();
    }
    if (watch.check(now) === "stalled" && state === "playing") setStatus("stalled", INTERRUPTED);
  }, STALL_CHECK_MS);
  watch.frame(performance.now());
}

// watchTransport ends the attempt as soon as the server closes its DTLS
// transport (close_notify), which it does when it ends the session. The
// browser keeps the PeerConnection "connected" after that (ICE still
// works), so without this the page would sit on a frozen picture until
// ICE times out, seconds later.
function watchTransport(att, pc) {
  const receiver = typeof pc.getReceivers === "function" ? pc.getReceivers()[0] : null;
  const transport = receiver && receiver.transport;
  if (!transport || typeof transport.addEventListener !== "function") return;
  transport.addEventListener("statechange", () => {
    if (transport.state === "closed" || transport.state === "failed") drop(att, "Stream ended");
  });
}
