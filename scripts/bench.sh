#!/usr/bin/env bash
# bench.sh — the capacity test behind `make bench`.
#
# 1. Go benchmarks of the packages (short -benchtime), among them one
#    path's AAC→Opus transcoding in % of a core and the RSS it adds.
# 2. A 60 s 1280x720@30 H.264 clip (~2.5 Mbit/s, GOP 60, no B-frames) with
#    AAC 128 kbit/s stereo, made once and cached as bench/clip.ts (remade
#    when an older cached clip has no AAC).
# 3. srtwhep on CPU 0 (loopback ports checked free), the publisher
#    (ffmpeg -re -stream_loop -1 -c copy, almost free; the server transcodes
#    the AAC once for the path) and whep-loadgen on CPU 1, and whep-loadgen
#    ladders against the server's PID: viewers offering video only, then
#    video and audio (and the ratio of their marginal costs), then the extra
#    viewer modes. The video ladder takes a 10 s CPU profile of the server
#    at N = PROFILE_AT (pprof on the metrics listener).
# 4. With two servers (BASE or SERVERS), the ladders alternate between
#    them, ROUNDS times in ABBA order, so machine noise falls on both;
#    whep-loadgen headline then prints each figure's median per server and
#    the ratio of their marginal costs (later server / first). BASE=REV
#    builds REV's cmd/srtwhep from a temporary copy of its tree (git
#    archive) and compares it, labelled "base", with this tree's, "this":
#    `BASE=93f81f9 ROUNDS=2 scripts/bench.sh`. SERVERS="LABEL=BINARY ..."
#    names prebuilt binaries instead (labels of letters, digits, '.', '_'
#    and '-'; this tree's is bin/srtwhep, built here). Both servers read
#    the config written below, so an older one must know its keys. The
#    sections around the ladders (glass-to-glass, transcoding) measure the
#    last server only, at its first start.
#
# The headline viewers are browser-like (whep-loadgen -mode browser): an
# RTCP receiver report a second and NACKs for missing packets, NACK and PLI
# offered, plain UDP receive without GRO, because that is what the server
# meets in the field. EXTRA_MODES adds ladders of other modes (default gro:
# no RTCP and UDP_GRO receive, which spares the server segmenting its GSO
# sends on loopback; and pinned: browser viewers, every second one pinned
# to the 360p rendition), printed as labelled extras, never as the headline.
#
# Everything lands in bench/results/<UTC timestamp>/ (git-ignored) and the
# report is printed. Tunables (environment): LADDERS ("video audio", one of
# them, or none: no ladder at all, only the sections around them, each of
# which has its own switch below), STEPS, HOLD, RAMP, DECODE_EVERY,
# MAX_DECODE (a decoding session costs the generator ~3 server viewers, so
# the sample is capped), GOBENCH
# (the -bench pattern of step 1, default "."; empty skips it), G2G (how
# long the glass-to-glass measurement runs, default 20s; 0 skips it),
# BASE (a git revision) or SERVERS (see 4; default: this tree's server
# alone, labelled "this"), ROUNDS (default 1), EXTRA_MODES (default "gro
# pinned": viewers receiving with GRO, and browser viewers half of which
# pin the 360p rendition; empty skips), EXTRA_STEPS (their steps, default 100,200,400), PROFILE_AT
# (default 400; 0 skips the profile), TRANSCODE_HOLD (seconds the 720p
# clip is transcoded on the first server for the video transcoder's CPU,
# default 20; 0 skips it).
#
# Last, the hostile section (HOSTILE, default on; HOSTILE=0 skips it): the
# long runs of internal/hostile's attacks, each against a fresh server on
# loopback, with their figures in the report: an endless PES (TS packets on
# the video PID that never start a new unit) at HOSTILE_ENDLESS
# (MBITS:SECONDS,…, default 20:60,50:60), the server's RSS before and at
# its peak; three floods of HOSTILE_SRTFLOOD (default 30) seconds of
# 100 SRT handshakes a second with a wrong passphrase, the RSS after each;
# HOSTILE_NACKFLOOD (default 10) seconds of one viewer's 500 NACKs a
# second, HOSTILE_PUBFLOOD (default 8) MiB of garbage from each of 200
# publisher connections from one address, HOSTILE_CROWD (default 300)
# viewers behind one address within 10 s with the player's retry policy;
# and HOSTILE_OFFERFLOOD (default 60) seconds of 16 addresses each posting
# 10 WHEP offers a second that never start ICE, with the share of a
# legitimate client's POSTs answered 201 meanwhile; and with HOSTILE_4K
# (default 1; 0 skips it) a 3840x2160 60 fps H.264 clip at ~40 Mbit/s
# (made once, cached as bench/clip-2160p60.ts) played by a decoding viewer:
# its frame rate and the largest access unit, with no picture lost to the
# unit cap.
#
# Then the encoders section (ENCODERS, default on; ENCODERS=0 skips it):
# the publisher matrix (cmd/srtwhep TestEncoders), ffmpeg, OBS's x264
# settings, GStreamer 1.22, srt-live-transmit and H.265 each pushed to a
# fresh server with the default config and played by a pion viewer, its
# table in encoders.md (ENCODERS_SIZE, default 640x360, sets the picture).
#
# Before the ladders, on the idle server: glass-to-glass latency from a
# generated 640x360@30 clip whose frames carry their creation time in their
# pixels (whep-loadgen g2g, see bench/internal/glass), median and p95, and
# the server's own share from srtwhep_server_latency_seconds over the same
# run; then the same through the video transcoder, and an H.265 clip
# played as published by a viewer offering H.265 and as the path's H.264
# rendition by one that does not.
set -euo pipefail

cd "$(dirname "$0")/.."

STEPS=${STEPS:-10,25,50,100,200,300,400,500,600,800,1000}
HOLD=${HOLD:-15s}
RAMP=${RAMP:-25/s}
DECODE_EVERY=${DECODE_EVERY:-10}
MAX_DECODE=${MAX_DECODE:-4}
# Light receivers read each socket every PACE: longer rounds batch more
# datagrams per recvmmsg(2), which keeps the generator far cheaper than
# the server it measures.
PACE=${PACE:-20ms}
LADDERS=${LADDERS:-video audio}
GOBENCH=${GOBENCH-.}
G2G=${G2G:-20s}
TRANSCODE_HOLD=${TRANSCODE_HOLD:-20}
BASE=${BASE-}
SERVERS=${SERVERS-}
ROUNDS=${ROUNDS:-1}
EXTRA_MODES=${EXTRA_MODES-gro pinned}
EXTRA_STEPS=${EXTRA_STEPS:-100,200,400}
PROFILE_AT=${PROFILE_AT:-400}
SRT_PORT=18890
HTTP_PORT=18889
MEDIA_PORT=18189
METRICS_PORT=19998
CLIP=bench/clip.ts

for tool in go ffmpeg ffprobe taskset ss; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench.sh: '$tool' not found; run 'make deps MODE=run' (taskset and ss come with util-linux and iproute2)" >&2
		exit 1
	fi
done
if [[ $(nproc) -lt 2 ]]; then
	echo "bench.sh: needs 2 CPUs (server on CPU 0, publisher and generator on CPU 1); this machine has $(nproc)" >&2
	exit 1
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
# Other work on the machine shows in every figure: the report says how busy
# it was.
load0=$(cut -d' ' -f1-3 /proc/loadavg)
out=bench/results/$stamp
mkdir -p "$out"
pids=()
tmp=
cleanup() {
	local pid
	if [[ -n $tmp ]]; then
		rm -rf "$tmp"
	fi
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() { # proto port
	[[ -n $(ss -Hln "--$1" "sport = :$2" 2>/dev/null) ]]
}
for p in "udp $SRT_PORT" "tcp $HTTP_PORT" "udp $MEDIA_PORT" "tcp $METRICS_PORT"; do
	# shellcheck disable=SC2086 # "proto port" splits on purpose
	if port_busy $p; then
		echo "bench.sh: port $p is in use; stop what holds it (ss -lnp | grep ${p#* }) and retry" >&2
		exit 1
	fi
done

# http_get URL-PATH PORT: a tiny HTTP/1.0 GET over bash's /dev/tcp, so the
# bench needs no curl.
http_get() {
	local body
	exec 3<>"/dev/tcp/127.0.0.1/$2" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
	body=$(cat <&3) || true
	exec 3<&-
	printf '%s' "$body"
}

# wait_for WHAT SECONDS COMMAND...: poll COMMAND every 0.2 s until it
# succeeds or the deadline passes.
wait_for() {
	local what=$1 limit=$2 deadline
	shift 2
	deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			echo "bench.sh: $what not ready after ${limit}s; logs in $out" >&2
			return 1
		fi
		sleep 0.2
	done
}

# The servers measured, as LABEL=BINARY in the headline's order. The base
# is built before the long sections, so a wrong revision fails at once.
if [[ -n $BASE ]]; then
	if [[ -n $SERVERS ]]; then
		echo "bench.sh: set BASE or SERVERS, not both" >&2
		exit 2
	fi
	if ! rev=$(git rev-parse --verify --quiet "$BASE^{commit}"); then
		echo "bench.sh: BASE=$BASE is no commit of this repository" >&2
		exit 2
	fi
	tmp=$(mktemp -d)
	# An exported tree, not a git worktree: an interrupted run leaves
	# nothing behind in the repository.
	base_version=$(git describe --tags --always "$rev")
	echo "== building the base server ($BASE: $base_version)"
	mkdir "$tmp/src"
	git archive "$rev" | tar -x -C "$tmp/src"
	(cd "$tmp/src" && go build -ldflags "-X github.com/srtwhep/srtwhep/pkg/version.Version=$base_version" \
		-o "$tmp/srtwhep-base" ./cmd/srtwhep)
	rm -rf "$tmp/src"
	SERVERS="base=$tmp/srtwhep-base this=bin/srtwhep"
fi
labels=()
declare -A binary_of=()
for word in ${SERVERS:-this=bin/srtwhep}; do
	label=${word%%=*}
	if [[ $word != *=?* || ! $label =~ ^[A-Za-z0-9._-]+$ || -n ${binary_of[$label]:-} ]]; then
		echo "bench.sh: SERVERS takes distinct LABEL=BINARY words (labels of letters, digits, '.', '_', '-'), not '$word'" >&2
		exit 2
	fi
	labels+=("$label")
	binary_of[$label]=${word#*=}
done
# The sections around the ladders measure the last server (with BASE,
# this tree's).
around=${labels[${#labels[@]} - 1]}

if [[ -n $GOBENCH ]]; then
	echo "== go benchmarks (bench/results/$stamp/go-bench.txt)"
	go test -run '^$' -bench "$GOBENCH" -benchmem -benchtime 200ms ./pkg/... | tee "$out/go-bench.txt"
fi

# clip_has_aac: clips cached before sound was benchmarked are video only.
clip_has_aac() {
	# ffprobe names the stream once per program it belongs to.
	ffprobe -v error -select_streams a:0 -show_entries stream=codec_name -of csv=p=0 "$CLIP" 2>/dev/null | grep -qx aac
}
if [[ ! -s $CLIP ]] || ! clip_has_aac; then
	echo "== making $CLIP once (60 s 1280x720@30, libx264 2.5 Mbit/s, GOP 60, no B-frames; AAC 128 kbit/s stereo)"
	mkdir -p "$(dirname "$CLIP")"
	# Two tones over noise, different per channel: a pure tone or identical
	# channels would let Opus spend less than real sound makes it.
	ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 \
		-f lavfi -i "aevalsrc=0.3*sin(2*PI*440*t)+0.05*(2*random(0)-1)|0.3*sin(2*PI*660*t)+0.05*(2*random(1)-1):s=44100:c=stereo" \
		-t 60 -map 0:v -map 1:a \
		-c:v libx264 -preset veryfast -pix_fmt yuv420p -b:v 2500k -maxrate 2500k -bufsize 5000k \
		-g 60 -bf 0 -c:a aac -b:a 128k -ac 2 -f mpegts "$CLIP.tmp"
	mv "$CLIP.tmp" "$CLIP"
fi

echo "== building bin/srtwhep, bin/whep-loadgen and bin/ladderplot"
# The report names the exact build it measured.
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
ldflags="-X github.com/srtwhep/srtwhep/pkg/version.Version=$version"
go build -ldflags "$ldflags" -o bin/srtwhep ./cmd/srtwhep
# whep-loadgen is a command of the bench module, which keeps the bench
# tooling out of the server's module.
(cd bench && go build -ldflags "$ldflags" -o ../bin/whep-loadgen ./cmd/whep-loadgen)
# The plot is drawn by tools/ladderplot, a module of its own, which keeps
# the plotting library out of the server's module and out of make test:
# it is vetted and tested here, where it is used.
(cd tools/ladderplot && go mod tidy -diff && go vet ./... && go test -count=1 ./... && go build -o ../../bin/ladderplot .)
for label in "${labels[@]}"; do
	if [[ ! -x ${binary_of[$label]} ]]; then
		echo "bench.sh: server $label: ${binary_of[$label]} is not an executable file" >&2
		exit 2
	fi
done

cat >"$out/srtwhep.yml" <<YAML
# Written by scripts/bench.sh: loopback only, admission control off so the
# ladder sees the server's real ceiling, pprof for the profile at N=$PROFILE_AT.
logLevel: warn
srt:
  listen: "127.0.0.1:$SRT_PORT"
http:
  listen: "127.0.0.1:$HTTP_PORT"
  # Every generated viewer posts from 127.0.0.1, at the ramp's rate.
  offerRate: 1000
  offerBurst: 1000
webrtc:
  listenIP: "127.0.0.1"
  udpPort: $MEDIA_PORT
  tcpPort: 0
metrics:
  listen: "127.0.0.1:$METRICS_PORT"
  pprof: true
readers:
  maxCPUPercent: 0
# The transcode section: the same clips through the video transcoder.
paths:
  live/g2gtc:
    video: transcode
  live/benchtc:
    video: transcode
YAML

# start_server BINARY LOG: the server BINARY on CPU 0 and the publisher on
# CPU 1; sets srv and pub.
start_server() {
	local binary=$1 log=$2
	taskset -c 0 "$binary" -config "$out/srtwhep.yml" >"$log" 2>&1 &
	srv=$!
	pids+=("$srv")
	if ! wait_for "srtwhep /readyz" 20 bin/srtwhep -probe "http://127.0.0.1:$HTTP_PORT/readyz"; then
		tail -5 "$log" >&2
		return 1
	fi
	taskset -c 1 ffmpeg -hide_banner -loglevel error -re -stream_loop -1 -i "$CLIP" -c copy -f mpegts \
		"srt://127.0.0.1:$SRT_PORT?streamid=publish:live/bench&pkt_size=1316" >"$log.ffmpeg" 2>&1 &
	pub=$!
	pids+=("$pub")
	wait_for "the publisher" 20 publishing
}

# stop_server: ends the server and publisher started last, and waits for
# their ports to be free for the next one.
stop_server() {
	kill "$pub" "$srv" 2>/dev/null || true
	wait "$pub" "$srv" 2>/dev/null || true
	# Reaped: their ids may be reused, so cleanup must not kill them again.
	pids=()
	wait_for "ports to be free" 20 ports_free
}
ports_free() {
	local p
	for p in "udp $SRT_PORT" "tcp $HTTP_PORT" "udp $MEDIA_PORT" "tcp $METRICS_PORT"; do
		# shellcheck disable=SC2086 # "proto port" splits on purpose
		if port_busy $p; then
			return 1
		fi
	done
}
publishing() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	grep -q '^srtwhep_path_publisher_up{path="live/bench"} 1' <<<"$m"
}

# audio_cpu_seconds: the server's transcoding CPU so far for the path.
# video_cpu_seconds: the video transcoder's CPU seconds for live/benchtc.
video_cpu_seconds() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	awk '/^srtwhep_path_video_transcode_cpu_seconds_total\{.*path="live\/benchtc"/ {print $2; found=1} END {exit !found}' <<<"$m"
}

# transcode_cpu: publishes the bench clip (720p30) to live/benchtc, where
# video: transcode is set, for TRANSCODE_HOLD and prints the transcoder's
# share of one core, by its own metric and by the server's CPU time.
transcode_cpu() {
	local p a b s0 s1 t0
	taskset -c 1 ffmpeg -hide_banner -loglevel error -re -stream_loop -1 -i "$CLIP" -c copy -f mpegts \
		"srt://127.0.0.1:$SRT_PORT?streamid=publish:live/benchtc&pkt_size=1316" >/dev/null 2>&1 &
	p=$!
	pids+=("$p")
	if ! wait_for "the transcoder" 20 video_cpu_seconds; then
		kill "$p" 2>/dev/null || true
		return 1
	fi
	a=$(video_cpu_seconds)
	s0=$(awk '{print $14 + $15}' "/proc/$srv/stat")
	t0=$SECONDS
	sleep "$TRANSCODE_HOLD"
	b=$(video_cpu_seconds)
	s1=$(awk '{print $14 + $15}' "/proc/$srv/stat")
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	awk -v a="$a" -v b="$b" -v s0="$s0" -v s1="$s1" -v hz="$(getconf CLK_TCK)" -v d="$((SECONDS - t0))" \
		'BEGIN {printf "- 1280x720@30 (the bench clip) transcoded in the server: %.1f %% of one core by srtwhep_path_video_transcode_cpu_seconds_total over %d s (goal ≤ 30 %%); the whole server meanwhile %.1f %% (one publisher passed through, one transcoded, no viewers)\n", 100*(b-a)/d, d, 100*(s1-s0)/hz/d}'
}

audio_cpu_seconds() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	awk '/^srtwhep_path_audio_transcode_cpu_seconds_total\{.*path="live\/bench"/ {print $2; found=1} END {exit !found}' <<<"$m"
}

# ladder DIR MODE STEPS PROFILE_AT LABEL [FLAGS...]: one whep-loadgen ladder
# against the running server, its report appended to report.md and its
# plot drawn as DIR/ladder.png.
ladder() {
	local dir=$1 mode=$2 steps=$3 profile=$4 label=$5
	shift 5
	mkdir -p "$dir"
	echo "== ladder ($label, $mode viewers${*:+, $*}): steps $steps, hold $HOLD, ramp $RAMP (server PID $srv on CPU 0; generator on CPU 1)"
	taskset -c 1 bin/whep-loadgen ladder -url "http://127.0.0.1:$HTTP_PORT/live/bench/whep" -pid "$srv" -mode "$mode" "$@" \
		-steps "$steps" -hold "$HOLD" -ramp "$RAMP" -decode-every "$DECODE_EVERY" -max-decode "$MAX_DECODE" -pace "$PACE" \
		-metrics "http://127.0.0.1:$METRICS_PORT/metrics" -profile-at "$profile" -label "$label" -out "$dir" \
		2> >(tee "$dir/ladder-progress.log" >&2) | tee "$dir/report.md" | tee -a "$out/report.md"
	bin/ladderplot -in "$dir/ladder-plot.json" -out "$dir/ladder.png"
}

for kind in $LADDERS; do
	case $kind in
	video | audio) ;;
	none)
		# The sections around the ladders alone: one server for the
		# glass-to-glass and transcode sections, then hostile and
		# encoders.
		EXTRA_MODES=
		;;
	*)
		echo "bench.sh: LADDERS may name video and audio (or be none), not '$kind'" >&2
		exit 2
		;;
	esac
done

# Every ladder gets a server of its own: memory a ladder leaves behind (a
# heap grown for 400 viewers) would make the next one's RSS per viewer
# meaningless.
runs=()
for kind in $LADDERS; do
	runs+=("$kind:browser")
done
if [[ $LADDERS == none ]]; then
	runs=("none:none")
fi
for mode in $EXTRA_MODES; do
	runs+=("video:$mode")
done
transcode=()
first=1
for ((round = 1; round <= ROUNDS; round++)); do
	order=("${labels[@]}")
	if ((round % 2 == 0)); then # ABBA: drift on the machine falls on every server alike
		order=()
		for ((i = ${#labels[@]} - 1; i >= 0; i--)); do order+=("${labels[i]}"); done
	fi
	for label in "${order[@]}"; do
		for run in "${runs[@]}"; do
			kind=${run%%:*}
			mode=${run#*:}
			name=$kind
			if [[ $mode != browser ]]; then
				name=$mode
			fi
			if [[ $kind == none && $label != "$around" ]]; then
				continue
			fi
			dir=$out/r$round/$label/$name
			mkdir -p "$dir"
			echo "== round $round/$ROUNDS: srtwhep ($label: ${binary_of[$label]}) on CPU 0 for the $name ladder"
			start_server "${binary_of[$label]}" "$dir/srtwhep.log"

			if [[ $G2G != 0 && $label == "$around" && $first == 1 ]]; then
				echo "== glass-to-glass ($G2G; publisher, encoder, decoder and viewer on CPU 1)"
				{
					echo "## Glass-to-glass on loopback, at the default srt.latency ($label)"
					echo
					taskset -c 1 bin/whep-loadgen g2g -srt "srt://127.0.0.1:$SRT_PORT?streamid=publish:live/g2g&pkt_size=1316" \
						-url "http://127.0.0.1:$HTTP_PORT/live/g2g/whep" -duration "$G2G" -metrics "http://127.0.0.1:$METRICS_PORT/metrics"
					echo
					# The same clip through the video transcoder (video:
					# transcode on live/g2gtc): the difference of the two
					# medians is what transcoding adds (goal ≤ ~50 ms).
					echo "### The same, transcoded (video: transcode)"
					echo
					taskset -c 1 bin/whep-loadgen g2g -srt "srt://127.0.0.1:$SRT_PORT?streamid=publish:live/g2gtc&pkt_size=1316" \
						-url "http://127.0.0.1:$HTTP_PORT/live/g2gtc/whep" -duration "$G2G" -metrics "http://127.0.0.1:$METRICS_PORT/metrics"
					echo
					# H.265 published (libx265, also ultrafast and
					# zerolatency): a viewer offering H.265 gets it as
					# published, one offering only H.264 the path's
					# H.264 rendition (video: auto); the difference of
					# these two medians is what the H.265 transcode adds.
					echo "### H.265 published, to a viewer offering H.265 (passthrough)"
					echo
					taskset -c 1 bin/whep-loadgen g2g -codec h265 -viewer-h265 -srt "srt://127.0.0.1:$SRT_PORT?streamid=publish:live/g2g265p&pkt_size=1316" \
						-url "http://127.0.0.1:$HTTP_PORT/live/g2g265p/whep" -duration "$G2G" -metrics "http://127.0.0.1:$METRICS_PORT/metrics" ||
						echo "- n/a: whep-loadgen g2g -codec h265 failed (its error is above)"
					echo
					echo "### H.265 published, to a viewer offering only H.264 (the path's H.264 rendition)"
					echo
					taskset -c 1 bin/whep-loadgen g2g -codec h265 -srt "srt://127.0.0.1:$SRT_PORT?streamid=publish:live/g2g265&pkt_size=1316" \
						-url "http://127.0.0.1:$HTTP_PORT/live/g2g265/whep" -duration "$G2G" -metrics "http://127.0.0.1:$METRICS_PORT/metrics" ||
						echo "- n/a: whep-loadgen g2g -codec h265 failed (its error is above)"
					echo
				} | tee -a "$out/report.md"
			fi
			if [[ $TRANSCODE_HOLD != 0 && $label == "$around" && $first == 1 ]]; then
				echo "== video transcoding ($TRANSCODE_HOLD of the 720p clip on live/benchtc)"
				if line=$(transcode_cpu); then
					transcode+=("$line")
				fi
			fi
			if [[ $label == "$around" ]]; then
				first=0
			fi

			if [[ $kind == none ]]; then
				stop_server
				continue
			fi
			flags=()
			profile=0
			steps=$EXTRA_STEPS
			viewers=$mode
			if [[ $mode == browser ]]; then
				steps=$STEPS
				case $kind in
				video) profile=$PROFILE_AT ;;
				audio) flags=(-audio) ;;
				esac
			elif [[ $mode == pinned ]]; then
				# Half the browser-like viewers pin the 360p rendition (the
				# layer extension's POST, as the player's quality menu does):
				# what a viewer on a lower rendition costs beside one on the
				# source, the transcoder's fixed cost apart.
				viewers=browser
				flags=(-pin '{"maxHeight":360}' -pin-every 2)
			fi
			audio0=$(audio_cpu_seconds || echo "")
			t0=$SECONDS
			ladder "$dir" "$viewers" "$steps" "$profile" "$label" "${flags[@]}"
			if [[ $kind == audio ]] && audio1=$(audio_cpu_seconds) && [[ -n $audio0 ]] && ((SECONDS > t0)); then
				transcode+=("$(awk -v a="$audio0" -v b="$audio1" -v s="$((SECONDS - t0))" -v l="$label" -v r="$round" \
					'BEGIN {printf "- In the server (%s, round %d) during the audio ladder: %.2f %% of one core (srtwhep_path_audio_transcode_cpu_seconds_total over %d s)", l, r, 100*(b-a)/s, s}')")
			fi
			stop_server
		done
	done
done

{
	echo
	# In the order of the servers, so the ratios read later / first
	# (with BASE: this / base).
	files=()
	for label in "${labels[@]}"; do
		files+=("$out"/r*/"$label"/*/ladder.json)
	done
	if [[ $LADDERS != none ]]; then
		bin/whep-loadgen headline "${files[@]}"
		echo
	fi
	for label in "${labels[@]}"; do
		d=$out/r1/$label
		if [[ -s $d/video/ladder.json && -s $d/audio/ladder.json ]]; then
			echo "Server: $label"
			echo
			bin/whep-loadgen compare -video "$d/video/ladder.json" -audio "$d/audio/ladder.json"
			echo
		fi
	done
	echo "## Transcoding, once per path"
	echo
	# The server's own account while the ladders ran, next to the Go
	# benchmark's, which measures the same work without the server.
	if ((${#transcode[@]} > 0)); then
		printf '%s\n' "${transcode[@]}"
	else
		echo "- In the server: n/a (no transcoding CPU metric for live/bench or live/benchtc)"
	fi
	awk '/^BenchmarkTranscodeAAC/ {for (i = 1; i < NF; i++) if ($(i+1) == "%core") printf "- BenchmarkTranscodeAAC (10 s of AAC 128 kbit/s stereo → Opus): %s %% of one core (goal ≤ 2 %%)\n", $i}
		/^BenchmarkTranscode720p/ {for (i = 1; i < NF; i++) {if ($(i+1) == "%core") c = $i; if ($(i+1) == "ms-in-transcoder") l = $i}; printf "- %s (10 s of 1280x720@30, 2.5 Mbit/s → libx264 ultrafast): %s %% of one core (goal ≤ 30 %%), %s ms a picture in the transcoder\n", $1, c, l}
		/^BenchmarkTranscoderRSS/ {for (i = 1; i < NF; i++) if ($(i+1) == "rss-bytes/path") printf "- BenchmarkTranscoderRSS: %.2f MiB of RSS per transcoding path\n", $i/1048576}' "$out/go-bench.txt" 2>/dev/null || true
} | tee -a "$out/report.md"

if [[ ${HOSTILE:-1} != 0 ]]; then
	echo "hostile: endless PES at ${HOSTILE_ENDLESS:-20:60,50:60} (Mbit/s:s) ..." >&2
	# The endless PES (and the 4K60 stream) run before the floods, not in
	# parallel with them: beside the SRT flood's 100 handshakes a second
	# in the same test process, the endless publisher's writes stalled
	# for over 2 s and the server closed it for sending no data (stage2,
	# 2026-12-02; alone, both rates ran their 60 s).
	HOSTILE_ENDLESS=${HOSTILE_ENDLESS:-20:60,50:60} HOSTILE_4K=${HOSTILE_4K:-1} go test -count=1 -timeout 20m -v \
		-run '^(TestEndlessPES|TestFourK60)$' ./internal/hostile >"$out/hostile.txt" 2>&1 || echo "hostile: FAILED (see $out/hostile.txt)" >&2
	HOSTILE_SRTFLOOD=${HOSTILE_SRTFLOOD:-30} HOSTILE_OFFERFLOOD=${HOSTILE_OFFERFLOOD:-60} go test -count=1 -timeout 20m -v \
		-run '^(TestSRTHandshakeFlood|TestOfferFlood)$' ./internal/hostile >>"$out/hostile.txt" 2>&1 || echo "hostile: FAILED (see $out/hostile.txt)" >&2
	# The round-two attacks, one after the other (each has its bystander):
	# 10 s of 500 NACKs a second, 200 publisher connections of 8 MiB of
	# garbage from one address, and 300 viewers behind one address.
	HOSTILE_NACKFLOOD=${HOSTILE_NACKFLOOD:-10} HOSTILE_PUBFLOOD=${HOSTILE_PUBFLOOD:-8} HOSTILE_CROWD=${HOSTILE_CROWD:-300} HOSTILE_TRANSCODE=1 go test -count=1 -timeout 20m -v \
		-run '^(TestNACKFlood|TestPublisherFlood|TestCrowdBehindOneAddress|TestTranscodeFitsTheBox)$' ./internal/hostile >>"$out/hostile.txt" 2>&1 || echo "hostile: FAILED (see $out/hostile.txt)" >&2
	{
		echo
		echo "## Hostile input (long runs)"
		echo
		grep -oE 'endless PES: .*|round [0-9]+: .*|SRT flood: .*|offer flood: .*|bystander: .*|4K60.*: .*|[0-9]+ NACKs .*|server CPU .*|publisher flood .*|server RSS .*|crowd: .*|1080p60 .*|second 1080p60 .*|--- (PASS|FAIL|SKIP): Test(EndlessPES|SRTHandshakeFlood|OfferFlood|FourK60|NACKFlood|PublisherFlood|CrowdBehindOneAddress|TranscodeFitsTheBox).*' "$out/hostile.txt" | sed 's/^/- /' || echo "- n/a (no figures in $out/hostile.txt)"
	} | tee -a "$out/report.md"
fi

if [[ ${ENCODERS:-1} != 0 ]]; then
	echo "encoders: the publisher matrix (TestEncoders) ..." >&2
	ENCODERS=1 ENCODERS_OUT="$PWD/$out/encoders.md" go test -count=1 -timeout 15m -v -run '^TestEncoders$' ./cmd/srtwhep \
		>"$out/encoders.txt" 2>&1 || echo "encoders: FAILED (see $out/encoders.txt)" >&2
	{
		echo
		echo "## Publishers (encoders)"
		echo
		cat "$out/encoders.md" 2>/dev/null || echo "- n/a (no table; see $out/encoders.txt)"
	} | tee -a "$out/report.md"
fi

{
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr); load average before the run: $load0"
	for label in "${labels[@]}"; do
		where=${binary_of[$label]}
		if [[ $where == "${tmp:-/nonexistent}"/* ]]; then
			where="BASE=$BASE, built in a temporary directory"
		fi
		echo "Server $label: $where, $("${binary_of[$label]}" -version 2>&1 | head -1)"
	done
	echo "Results: $out (rROUND/SERVER/{video,audio,${EXTRA_MODES// /,}}: ladder.md, ladder.json, ladder-plot.json, ladder.png, srtwhep.log, cpu-N$PROFILE_AT.pprof; go-bench.txt)"
} | tee -a "$out/report.md"
