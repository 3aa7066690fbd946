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
      setStatus("playing", liveText(att.viewers));
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
    if (watch.check(now) === "stalled") {
      if (state === "playing") setStatus("stalled", INTERRUPTED);
      probeServer(att);
    }
  }, STALL_CHECK_MS);
  watch.frame(performance.now());
}

// probeServer tells a stalled stream whose server died from one between
// two publishers, which the server keeps the session through: it asks the
// session URL, repeatedly while the picture stays stalled. A server that
// answers anything is up. One that refuses the connection is gone (a
// killed edge behind a load balancer, whose session URL names it, see
// http.publicURL), and the page reconnects through its endpoint at once
// instead of waiting for ICE to give up, some 5 to 7 s in Chromium plus
// DISCONNECT_GRACE_MS. A HEAD in no-cors mode needs nothing of the
// server's CORS setup: even an opaque answer is an answer. A probe that
// times out proves nothing; ICE decides then.
function probeServer(att) {
  if (!att.session || att.probing || cur !== att) return;
  att.probing = true;
  timedFetch(att.session, { method: "HEAD", mode: "no-cors" }, PROBE_TIMEOUT_MS).then(
    () => "up",
    (e) => (e && e.name === "AbortError" ? "unknown" : "gone"),
  ).then((r) => {
    att.probing = false;
    if (cur !== att || !att.watch || !att.watch.stalled) return;
    if (r === "gone") {
      drop(att, "Server unreachable");
      return;
    }
    att.timers.push(setTimeout(() => probeServer(att), PROBE_EVERY_MS));
  });
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
