#!/usr/bin/env bash
# bench.sh — the capacity test behind `make bench`.
#
# 1. Go benchmarks of the packages (short -benchtime).
# 2. A 60 s 1280x720@30 H.264 clip (~2.5 Mbit/s, GOP 60, no B-frames),
#    made once and cached as bench/clip.ts.
# 3. srtwhep on CPU 0 (loopback ports checked free), the publisher
#    (ffmpeg -re -stream_loop -1 -c copy, almost free) and whep-loadgen on
#    CPU 1, and the whep-loadgen ladder against the server's PID.
#
# Everything lands in bench/results/<UTC timestamp>/ (git-ignored) and the
# report is printed. Tunables (environment): STEPS, HOLD, RAMP, DECODE_EVERY,
# MAX_DECODE (a decoding session costs the generator ~3 server viewers, so
# the sample is capped).
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
SRT_PORT=18890
HTTP_PORT=18889
MEDIA_PORT=18189
METRICS_PORT=19998
CLIP=bench/clip.ts

for tool in go ffmpeg taskset ss; do
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

echo "== go benchmarks (bench/results/$stamp/go-bench.txt)"
go test -run '^$' -bench . -benchmem -benchtime 200ms ./pkg/... | tee "$out/go-bench.txt"

if [[ ! -s $CLIP ]]; then
	echo "== making $CLIP once (60 s 1280x720@30, libx264 2.5 Mbit/s, GOP 60, no B-frames)"
	mkdir -p "$(dirname "$CLIP")"
	ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -t 60 \
		-c:v libx264 -preset veryfast -pix_fmt yuv420p -b:v 2500k -maxrate 2500k -bufsize 5000k \
		-g 60 -bf 0 -f mpegts "$CLIP.tmp"
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

taskset -c 1 ffmpeg -hide_banner -loglevel error -re -stream_loop -1 -i "$CLIP" -c copy -f mpegts \
	"srt://127.0.0.1:$SRT_PORT?streamid=publish:live/bench&pkt_size=1316" >"$out/ffmpeg.log" 2>&1 &
pids+=("$!")
publishing() {
	local m
	m=$(http_get /metrics "$METRICS_PORT") || return 1
	grep -q '^srtwhep_path_publisher_up{path="live/bench"} 1' <<<"$m"
}
wait_for "the publisher" 20 publishing

echo "== ladder: steps $STEPS, hold $HOLD, ramp $RAMP (server PID $srv on CPU 0; generator on CPU 1)"
taskset -c 1 bin/whep-loadgen ladder -url "http://127.0.0.1:$HTTP_PORT/live/bench/whep" -pid "$srv" \
	-steps "$STEPS" -hold "$HOLD" -ramp "$RAMP" -decode-every "$DECODE_EVERY" -max-decode "$MAX_DECODE" -pace "$PACE" \
	-metrics "http://127.0.0.1:$METRICS_PORT/metrics" -out "$out" 2> >(tee "$out/ladder-progress.log" >&2) | tee "$out/report.md"

{
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr)"
	echo "Results: $out (ladder.md, ladder.json, ladder.png, go-bench.txt, logs)"
} | tee -a "$out/report.md"
