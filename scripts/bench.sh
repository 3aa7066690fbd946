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
#    the AAC once for the path) and whep-loadgen on CPU 1, and two
#    whep-loadgen ladders against the server's PID: viewers offering video
#    only, then video and audio, and the ratio of their marginal costs.
#
# Viewers are browser-like (NACK and PLI offered, plain UDP receive without
# GRO) because that is what the server meets in the field.
#
# Everything lands in bench/results/<UTC timestamp>/ (git-ignored) and the
# report is printed. Tunables (environment): STEPS, HOLD, RAMP, DECODE_EVERY,
# MAX_DECODE (a decoding session costs the generator ~3 server viewers, so
# the sample is capped), LADDERS ("video audio", or one of them), GOBENCH
# (the -bench pattern of step 1, default "."; empty skips it), G2G (how
# long the glass-to-glass measurement runs, default 20s; 0 skips it).
#
# Before the ladders, on the idle server: glass-to-glass latency from a
# generated 640x360@30 clip whose frames carry their creation time in their
# pixels (whep-loadgen g2g, see pkg/glass), median and p95, and the server's
# own share from srtwhep_server_latency_seconds over the same run.
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
out=bench/results/$stamp
mkdir -p "$out"
pids=()
cleanup() {
	local pid
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

if [[ -n $GOBENCH ]]; then
	echo "== go benchmarks (bench/results/$stamp/go-bench.txt)"
	go test -run '^$' -bench "$GOBENCH" -benchmem -benchtime 200ms ./pkg/... | tee "$out/go-bench.txt"
fi

# clip_has_aac: clips cached before sound was benchmarked are video only.
clip_has_aac() {
	[[ $(ffprobe -v error -select_streams a:0 -show_entries stream=codec_name -of csv=p=0 "$CLIP" 2>/dev/null) == aac ]]
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

echo "== building bin/srtwhep and bin/whep-loadgen"
# The report names the exact build it measured.
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
ldflags="-X github.com/srtwhep/srtwhep/pkg/version.Version=$version"
go build -ldflags "$ldflags" -o bin/srtwhep ./cmd/srtwhep
go build -ldflags "$ldflags" -o bin/whep-loadgen ./cmd/whep-loadgen

cat >"$out/srtwhep.yml" <<YAML
# Written by scripts/bench.sh: loopback only, admission control off so the
# ladder sees the server's real ceiling.
logLevel: warn
srt:
  listen: "127.0.0.1:$SRT_PORT"
http:
  listen: "127.0.0.1:$HTTP_PORT"
webrtc:
  listenIP: "127.0.0.1"
  udpPort: $MEDIA_PORT
  tcpPort: 0
metrics:
  listen: "127.0.0.1:$METRICS_PORT"
readers:
  maxCPUPercent: 0
YAML

taskset -c 0 bin/srtwhep -config "$out/srtwhep.yml" >"$out/srtwhep.log" 2>&1 &
srv=$!
pids+=("$srv")
wait_for "srtwhep /readyz" 20 bin/srtwhep -probe "http://127.0.0.1:$HTTP_PORT/readyz"

if [[ $G2G != 0 ]]; then
	echo "== glass-to-glass ($G2G; publisher, encoder, decoder and viewer on CPU 1)"
	{
		echo "## Glass-to-glass on loopback, at the default srt.latency"
		echo
		taskset -c 1 bin/whep-loadgen g2g -srt "srt://127.0.0.1:$SRT_PORT?streamid=publish:live/g2g&pkt_size=1316" \
			-url "http://127.0.0.1:$HTTP_PORT/live/g2g/whep" -duration "$G2G" -metrics "http://127.0.0.1:$METRICS_PORT/metrics"
		echo
	} | tee -a "$out/report.md"
fi

taskset -c 1 ffmpeg -hide_banner -loglevel error -re -stream_loop -1 -i "$CLIP" -c copy -f mpegts \
	"srt://127.0.0.1:$SRT_PORT?streamid=publish:live/bench&pkt_size=1316" >"$out/ffmpeg.log" 2>&1 &
pids+=("$!")
publishing() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	grep -q '^srtwhep_path_publisher_up{path="live/bench"} 1' <<<"$m"
}
wait_for "the publisher" 20 publishing

# audio_cpu_seconds: the server's transcoding CPU so far for the path.
audio_cpu_seconds() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	awk '/^srtwhep_path_audio_transcode_cpu_seconds_total\{.*path="live\/bench"/ {print $2; found=1} END {exit !found}' <<<"$m"
}
audio0=$(audio_cpu_seconds || echo "")
t0=$SECONDS

for kind in $LADDERS; do
	flags=()
	case $kind in
	video) ;;
	audio) flags=(-audio) ;;
	*)
		echo "bench.sh: LADDERS may name video and audio, not '$kind'" >&2
		exit 2
		;;
	esac
	mkdir -p "$out/$kind"
	echo "== ladder ($kind): steps $STEPS, hold $HOLD, ramp $RAMP (server PID $srv on CPU 0; generator on CPU 1)"
	taskset -c 1 bin/whep-loadgen ladder -url "http://127.0.0.1:$HTTP_PORT/live/bench/whep" -pid "$srv" "${flags[@]}" \
		-steps "$STEPS" -hold "$HOLD" -ramp "$RAMP" -decode-every "$DECODE_EVERY" -max-decode "$MAX_DECODE" -pace "$PACE" \
		-metrics "http://127.0.0.1:$METRICS_PORT/metrics" -out "$out/$kind" 2> >(tee "$out/$kind/ladder-progress.log" >&2) |
		tee "$out/$kind/report.md" | tee -a "$out/report.md"
done

{
	echo
	if [[ -s $out/video/ladder.json && -s $out/audio/ladder.json ]]; then
		bin/whep-loadgen compare -video "$out/video/ladder.json" -audio "$out/audio/ladder.json"
		echo
	fi
	echo "## Transcoding, once per path"
	echo
	# The server's own account while the ladders ran, next to the Go
	# benchmark's, which measures the same work without the server.
	if audio1=$(audio_cpu_seconds) && [[ -n $audio0 ]] && ((SECONDS > t0)); then
		awk -v a="$audio0" -v b="$audio1" -v s="$((SECONDS - t0))" \
			'BEGIN {printf "- In the server during the ladders: %.2f %% of one core (srtwhep_path_audio_transcode_cpu_seconds_total over %d s)\n", 100*(b-a)/s, s}'
	else
		echo "- In the server: n/a (no srtwhep_path_audio_transcode_cpu_seconds_total for live/bench)"
	fi
	awk '/^BenchmarkTranscodeAAC/ {for (i = 1; i < NF; i++) if ($(i+1) == "%core") printf "- BenchmarkTranscodeAAC (10 s of AAC 128 kbit/s stereo → Opus): %s %% of one core (goal ≤ 2 %%)\n", $i}
		/^BenchmarkTranscoderRSS/ {for (i = 1; i < NF; i++) if ($(i+1) == "rss-bytes/path") printf "- BenchmarkTranscoderRSS: %.2f MiB of RSS per transcoding path\n", $i/1048576}' "$out/go-bench.txt" 2>/dev/null || true
} | tee -a "$out/report.md"

{
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr)"
	echo "Results: $out (video/ and audio/: ladder.md, ladder.json, ladder.png; go-bench.txt, logs)"
} | tee -a "$out/report.md"
