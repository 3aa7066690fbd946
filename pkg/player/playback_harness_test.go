package player

// pageHarness runs the page's inline script, as served, against stand-ins
// for the browser objects it uses, and plays scenarios through it: what the
// offer asks for, when the sound button shows, what a click does, what is
// remembered, and what srtwhepStats() reports. The stand-ins model the two
// browser rules the page works around: muted playback is always allowed,
// unmuted playback only after a user gesture (unless the scenario's browser
// allows sound autoplay), and track events fire inside
// setRemoteDescription.
const pageHarness = `
const assert = require("node:assert/strict");
const fs = require("node:fs");
const vm = require("node:vm");
const src = fs.readFileSync("page-inline.js", "utf8");
const SOUND_KEY = "srtwhep.sound";
const realSetTimeout = setTimeout;

class Target {
  constructor() { this.l = {}; }
  addEventListener(type, fn, opts) { (this.l[type] = this.l[type] || []).push({ fn, once: !!(opts && opts.once) }); }
  removeEventListener(type, fn) { this.l[type] = (this.l[type] || []).filter((x) => x.fn !== fn); }
  dispatch(type, ev) {
    const e = Object.assign({ type, target: this }, ev);
    for (const x of [...(this.l[type] || [])]) {
      if (x.once) this.removeEventListener(type, x.fn);
      x.fn(e);
    }
  }
}

function answerSDP(audio) {
  let s = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n";
  s += audio === "sendonly" ? "a=group:BUNDLE 0 1\r\n" : "a=group:BUNDLE 0\r\n";
  s += "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendonly\r\na=rtpmap:102 H264/90000\r\n";
  if (audio === "sendonly") s += "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sendonly\r\na=rtpmap:111 opus/48000/2\r\n";
  if (audio === "rejected") s += "m=audio 0 UDP/TLS/RTP/SAVPF 0\r\nc=IN IP4 0.0.0.0\r\n";
  return s;
}

class Store {
  constructor(init) { this.m = new Map(Object.entries(init || {})); }
  getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
  setItem(k, v) { this.m.set(k, String(v)); }
}

// page loads the script once. joins lists, per WHEP POST, whether the
// answer has audio ("sendonly", "rejected" or "absent"); the last entry
// repeats. audioTrack "never" or "always" overrides whether an audio track
// event follows, to check that either signal alone is enough.
// token is the page's ?token=; iceFromEndpoint leaves the ICE server meta
// out, as the server does when some carry credentials, so the page asks
// the endpoint with OPTIONS.
// speed runs the page's clock (its timers and performance.now) that many
// times faster than real time.
function page({ joins, storage, soundAutoplay, audioTrack, token, iceFromEndpoint, speed }) {
  // frozen holds back the video's frames (a publisher gone); notFound
  // makes every POST a 404, whose times go to refusals.
  // gone makes the server that holds the session refuse connections (it
  // died; the endpoint, a load balancer's, still answers POSTs); probes
  // lists the requests that are not POSTs.
  // conflict makes every POST the server's 409 (no publisher) and noH264
  // its 400 for an offer without H.264, both as problem details.
  const w = { pcs: [], posts: 0, activated: false, frozen: false, notFound: false, conflict: false, noH264: false, problem: null, refusals: [], gone: false, probes: [] };
  const tick = () => new Promise((r) => realSetTimeout(r, 0));

  class Track extends Target { constructor(kind) { super(); this.kind = kind; } }
  class Stream { constructor() { this.tracks = []; } addTrack(t) { this.tracks.push(t); } getTracks() { return this.tracks.slice(); } }
  class Video extends Target {
    constructor() { super(); this._muted = true; this.paused = true; this.srcObject = null; this.videoWidth = 0; this.videoHeight = 0; this.plays = []; this.frames = 0; }
    get muted() { return this._muted; }
    set muted(v) {
      v = !!v;
      if (v === this._muted) return;
      this._muted = v;
      realSetTimeout(() => this.dispatch("volumechange", {}), 0);
    }
    play() {
      this.plays.push({ muted: this._muted, activated: w.activated });
      if (this._muted || w.activated || soundAutoplay) {
        this.paused = false;
        realSetTimeout(() => this.dispatch("playing", {}), 0);
        return Promise.resolve();
      }
      return Promise.reject(Object.assign(new Error("play() needs a gesture"), { name: "NotAllowedError" }));
    }
    requestVideoFrameCallback(cb) {
      const fire = () => {
        if (w.frozen) { realSetTimeout(fire, 10); return; }
        cb(performance.now(), {});
      };
      realSetTimeout(fire, this.frames++ ? 33 : 0); // 30 fps after the first
    }
    closest() { return null; }
  }
  const bar = new Target();
  class Button extends Target {
    constructor(text) { super(); this.hidden = false; this.textContent = text; this.attrs = {}; }
    setAttribute(k, v) { this.attrs[k] = v; }
    closest(sel) { return sel === "#bar" ? bar : null; }
  }
  const video = new Video();
  const unmute = new Button("Unmute");
  unmute.hidden = true; // as page.html has it
  const statsBtn = new Button("Stats");
  const els = {
    v: video, unmute, statsbtn: statsBtn,
    status: Object.assign(new Target(), { className: "connecting", textContent: "Connecting…", closest: () => null }),
    stats: { hidden: true, textContent: "" },
  };
  const document = new Target();
  document.getElementById = (id) => els[id] || null;
  document.querySelector = (sel) => (sel.includes("srtwhep-ice-servers") && !iceFromEndpoint ? { content: "[]" } : null);

  class PC extends Target {
    constructor(config) {
      super();
      this.config = config;
      this.transceivers = [];
      this.iceGatheringState = "complete";
      this.connectionState = "new";
      this.iceConnectionState = "new";
      w.pcs.push(this);
    }
    addTransceiver(kind, init) {
      const tr = { kind, direction: init && init.direction, setCodecPreferences() {} };
      this.transceivers.push(tr);
      return tr;
    }
    async createOffer() {
      return { type: "offer", sdp: this.transceivers.map((t, i) => "m=" + t.kind + " 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:" + i + "\r\na=" + t.direction + "\r\n").join("") };
    }
    async setLocalDescription(d) { this.localDescription = d; }
    async setRemoteDescription(d) {
      this.remoteDescription = d;
      // What a browser does: a track per section the answer sends on.
      this.dispatch("track", { track: new Track("video"), streams: [] });
      const audio = audioTrack ? audioTrack === "always" : this.answerAudio === "sendonly";
      if (audio) this.dispatch("track", { track: new Track("audio"), streams: [] });
      realSetTimeout(() => this.setState("connected"), 0);
    }
    setState(s) { this.connectionState = s; this.iceConnectionState = s; this.dispatch("connectionstatechange", {}); }
    getReceivers() {
      if (!this.dtls) this.dtls = Object.assign(new Target(), { state: "connected" });
      return [{ transport: this.dtls }];
    }
    // closeDTLS is the server's close_notify: the browser's DTLS transport
    // closes while the PeerConnection stays "connected".
    closeDTLS() { this.dtls.state = "closed"; this.dtls.dispatch("statechange", {}); }
    close() { this.closed = true; }
    async getStats() {
      const r = new Map([
        ["v", { type: "inbound-rtp", kind: "video", framesDecoded: 30, packetsReceived: 400, bytesReceived: 500000 }],
      ]);
      if (this.answerAudio === "sendonly") {
        r.set("a", { type: "inbound-rtp", kind: "audio", codecId: "c111", packetsReceived: 50, packetsLost: 1, bytesReceived: 6000, totalSamplesReceived: 48000, concealedSamples: 480, silentConcealedSamples: 0, audioLevel: 0.25 });
        r.set("c111", { type: "codec", mimeType: "audio/opus", sdpFmtpLine: "minptime=10;useinbandfec=1" });
      }
      return r;
    }
  }

  async function fetch(url, init) {
    if (init.method !== "POST") {
      w.probes.push({ url, method: init.method, mode: init.mode, headers: init.headers, at: Date.now() });
      if (w.gone) throw new TypeError("Failed to fetch");
      if (init.method === "OPTIONS") {
        const links = '<stun:s.example>; rel="ice-server", <turn:t.example>; rel="ice-server"; username="1:ab"; credential="c"; credential-type="password"';
        return { status: 204, statusText: "No Content", ok: true, headers: new Map([["Link", links]]), text: async () => "" };
      }
      return { status: 200, statusText: "OK", headers: new Map(), text: async () => "" };
    }
    assert.equal(url, "http://h/live/cam1/whep");
    if (w.notFound) {
      w.refusals.push(Date.now());
      return { status: 404, statusText: "Not Found", headers: new Map(), text: async () => "no stream is being published on this path" };
    }
    if (w.problem) {
      // Any other problem detail the scenario hands in, as pkg/whep writes it.
      w.refusals.push(Date.now());
      const p = w.problem;
      return { status: p.status, statusText: "", headers: new Map([["Content-Type", "application/problem+json"]]), text: async () => JSON.stringify(p) };
    }
    if (w.conflict || w.noH264) {
      w.refusals.push(Date.now());
      const p = w.conflict
        ? { type: "https://srtwhep.dev/problems/no-publisher", title: "No publisher on this path", status: 409,
            detail: 'no stream is being published on path "live/cam1"', retry_after: 1 }
        : { type: "https://srtwhep.dev/problems/no-h264", title: "Browser offers no H.264", status: 400,
            detail: "offer has no H.264 (packetization-mode=1) video; offered: VP8, VP9" };
      // Retry-After is not exposed (cross-origin): the body's retry_after is all the page has.
      return { status: p.status, statusText: "", headers: new Map([["Content-Type", "application/problem+json"]]), text: async () => JSON.stringify(p) };
    }
    const pc = w.pcs[w.pcs.length - 1];
    pc.offer = init.body;
    pc.answerAudio = joins[Math.min(w.posts++, joins.length - 1)];
    return {
      status: 201, statusText: "Created",
      headers: new Map([["Location", "/live/cam1/whep/s" + w.posts]]),
      text: async () => answerSDP(pc.answerAudio),
    };
  }

  const win = new Target();
  const ctx = {
    document, fetch, URL, AbortController, performance, console,
    location: { href: "http://h/live/cam1" + (token ? "?token=" + token : "") },
    setTimeout, clearTimeout, setInterval, clearInterval,
    RTCPeerConnection: PC, MediaStream: Stream,
    RTCRtpReceiver: { getCapabilities: () => ({ codecs: [{ mimeType: "video/H264", sdpFmtpLine: "packetization-mode=1;profile-level-id=42e01f" }] }) },
    addEventListener: (t, fn, o) => win.addEventListener(t, fn, o),
    removeEventListener: (t, fn) => win.removeEventListener(t, fn),
  };
  if (speed) {
    ctx.setTimeout = (fn, ms, ...args) => setTimeout(fn, (ms || 0) / speed, ...args);
    ctx.setInterval = (fn, ms, ...args) => setInterval(fn, (ms || 0) / speed, ...args);
    ctx.performance = { now: () => performance.now() * speed };
  }
  if (storage === "throws") Object.defineProperty(ctx, "localStorage", { get() { throw new Error("SecurityError"); } });
  else ctx.localStorage = storage;
  ctx.window = ctx;
  vm.createContext(ctx);
  vm.runInContext(src, ctx, { filename: "page-inline.js" });

  // click is a user gesture on el that bubbles to the document.
  const click = async (el) => {
    w.activated = true;
    el.dispatch("click", {});
    document.dispatch("click", { target: el });
    await tick();
    await tick();
  };
  const until = async (what, cond, ms = 3000) => {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error("timed out waiting for " + what + "; status " + els.status.textContent);
      await new Promise((r) => realSetTimeout(r, 5));
    }
  };
  const playing = () => until("Playing", () => els.status.textContent === "Playing" && video.srcObject);
  const stats = () => ctx.srtwhepStats();
  const button = () => (unmute.hidden ? "hidden" : unmute.textContent);
  const fail = (name) => w.pcs[w.pcs.length - 1].setState(name);
  const leave = () => win.dispatch("pagehide", {});
  return { w, video, unmute, statsBtn, els, click, until, playing, stats, button, fail, leave, tick };
}

`
