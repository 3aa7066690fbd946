#!/usr/bin/env bash
# deps.sh MODE — make sure the Debian packages srtwhep needs are installed.
#
#   build  libsrt-openssl-dev pkg-config           (compile the cgo SRT code)
#          + FFmpeg 5.1 and libopus headers        (pkg/audio: AAC/MP2 decode, Opus encode)
#   run    build + ffmpeg                          (publish a test stream)
#   test   run + chromium iptables nftables iproute2 shellcheck docker-compose
#          + GStreamer 1.22 (gst-launch-1.0; srtsink, mpegtsmux, h264parse
#          in -bad, x264enc in -ugly): publishers set up the way users get
#          wrong (cmd/srtwhep/gstreamer_test.go); about 6 MB to download
#          (docker-compose 1.29 only parses the compose file; no engine is used)
#          + node and npm, when not on PATH (nodejs npm)
#   bench  run + GStreamer 1.22 (as test, + libav plugins)
#          + srt-tools (srt-live-transmit): the publishers of the
#          encoders section (TestEncoders)
#
# DEPS_BESIDE="COMMAND ARG..." runs COMMAND beside the install, only when
# there is one (see below).
#
# Idempotent and quick when everything is present: dpkg-query only, no
# apt-get update (and that only when the install needs it). Missing
# packages are installed as root (or through a password-less sudo);
# otherwise the exact apt line is printed and the script exits 1.
set -euo pipefail

usage() {
	echo "usage: $0 build|run|test|bench" >&2
	exit 2
}

[[ $# -eq 1 ]] || usage

# pkg/audio binds only libavcodec, libswresample and libavutil (and
# pkg/vtranscode libavcodec, libswscale and libavutil), on
# purpose: Debian builds libavformat/libavfilter/libavdevice against
# libsrt-gnutls, which would load a second libsrt beside srtgo's openssl
# one. The binary then needs, at run time: libsrt1.5-openssl libavcodec59
# libswresample4 libswscale6 libavutil57 libopus0 libopusfile0 (the Dockerfile's
# runtime stage installs exactly these).
# gopkg.in/hraban/opus.v2 links libopusfile unless built with the
# nolibopusfile tag; installing it keeps plain `go build` and `go test`
# working with no tags to remember.
audio_build_pkgs=(libavcodec-dev libswresample-dev libswscale-dev libavutil-dev libopus-dev libopusfile-dev)
build_pkgs=(libsrt-openssl-dev pkg-config "${audio_build_pkgs[@]}")
run_pkgs=("${build_pkgs[@]}" ffmpeg)
gst_pkgs=(gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly)
test_pkgs=("${run_pkgs[@]}" chromium iptables nftables iproute2 shellcheck docker-compose "${gst_pkgs[@]}")
# The publisher matrix runs the encoders people use; x264enc is in -ugly,
# srtsink and h265parse in -bad, avenc_aac/avenc_mp2 in -libav.
bench_pkgs=("${run_pkgs[@]}" "${gst_pkgs[@]}" gstreamer1.0-libav srt-tools)

case "$1" in
build) want=("${build_pkgs[@]}") ;;
run) want=("${run_pkgs[@]}") ;;
test) want=("${test_pkgs[@]}") ;;
bench) want=("${bench_pkgs[@]}") ;;
-h | --help) usage ;;
*)
	echo "deps.sh: unknown mode '$1'" >&2
	usage
	;;
esac

# Go is not a Debian package here (Debian 12 ships 1.19; the module needs the
# version in go.mod), so it is only checked, never installed.
if ! command -v go >/dev/null 2>&1; then
	echo "deps.sh: 'go' is not on PATH; install Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") from https://go.dev/dl/ and add it to PATH" >&2
	exit 1
fi

missing=()
for p in "${want[@]}"; do
	# "install ok installed" is the only state with usable files; removed
	# packages can linger as "deinstall ok config-files".
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [[ "$status" != "install ok installed" ]]; then
		missing+=("$p")
	fi
done

# Node.js: pkg/player runs the page's script in node, and the end-to-end
# TestThirdPartyPlayer installs third-party players with npm. Any node and
# npm on PATH will do (NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package), so only missing commands are installed.
if [[ "$1" == test ]]; then
	command -v node >/dev/null 2>&1 || missing+=(nodejs)
	command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

apt_line="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"

if [[ $(id -u) -eq 0 ]]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	as_root=(sudo -n)
else
	echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
	echo "deps.sh: install them as root with:" >&2
	echo "  sudo sh -c '$apt_line'" >&2
	exit 1
fi

# apt-get install PACKAGE...: waits for the dpkg lock (another deps.sh,
# or unattended upgrades) rather than failing at once, and skips dpkg's
# fsync after every file (--force-unsafe-io): that is most of its time on
# a small disk, and a machine that dies mid-install runs the install
# again anyway. The package lists are fetched only when the install
# cannot go on without them: none yet (a fresh machine), or a version the
# mirror no longer has.
install() {
	echo "deps.sh: installing $*" >&2
	if ! apt_install "$@"; then
		echo "deps.sh: fetching the package lists (apt-get update) and trying again" >&2
		"${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600 update
		apt_install "$@"
	fi
}
apt_install() {
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-unsafe-io "$@"
}

# DEPS_BESIDE (make test: scripts/warm.sh) runs while the packages install,
# as the calling user, in its own session (so it ends with everything it
# started) and under SCHED_IDLE (apt's unpacking keeps the CPU it asks
# for); it is ended when the install ends, whether it finished or not.
# The packages the compiler needs (build_pkgs: the cgo headers) are
# installed first, on their own, so that it can compile the whole server,
# cgo included, while the rest (the browser, ffmpeg, GStreamer: most of
# the download and of dpkg's time) installs.
first=() rest=("${missing[@]}")
if [[ -n ${DEPS_BESIDE:-} ]]; then
	rest=()
	for p in "${missing[@]}"; do
		if [[ " ${build_pkgs[*]} " == *" $p "* ]]; then
			first+=("$p")
		else
			rest+=("$p")
		fi
	done
fi
beside=
end_beside() {
	[[ -n $beside ]] || return 0
	kill -TERM -- -"$beside" 2>/dev/null || true
	wait "$beside" 2>/dev/null || true
	echo "deps.sh: beside the install: $(tr '\n' ';' <"$beside_log")" >&2
	rm -f "$beside_log"
	beside=
}
trap end_beside EXIT

# It starts at once (the modules download meanwhile) and is told when the
# headers are in by the file DEPS_HEADERS names.
if [[ -n ${DEPS_BESIDE:-} ]]; then
	read -ra beside_cmd <<<"$DEPS_BESIDE"
	beside_log=$(mktemp)
	headers=$(mktemp -u)
	DEPS_HEADERS=$headers setsid chrt -i 0 "${beside_cmd[@]}" >"$beside_log" 2>&1 &
	beside=$!
fi
[[ ${#first[@]} -eq 0 ]] || install "${first[@]}"
[[ -z ${headers:-} ]] || touch "$headers"
[[ ${#rest[@]} -eq 0 ]] || install "${rest[@]}"
end_beside
[[ -z ${headers:-} ]] || rm -f "$headers"
