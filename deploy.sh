#!/usr/bin/env bash
# deploy.sh — run srtwhep with Docker Compose on this host (Ubuntu 24.04, Debian 12).
#
#   ./deploy.sh                        install Docker if missing, find the public IP, build, start
#   PUBLIC_IP=203.0.113.7 ./deploy.sh  use this address in ICE candidates (or --public-ip IP)
#   ./deploy.sh --dry-run              write the .env file, print every other step instead of doing it
#   ./deploy.sh --uninstall [--purge]  stop and remove the container and .env (--purge: the image too)
#
# Options: --env-file FILE (default .env next to this script), --no-metadata (do not ask
# the cloud metadata service), --no-stun (no STUN query), --ready-timeout SECONDS (default 90).
# Environment: PUBLIC_IP; DEPLOY_METADATA_URL (default http://169.254.169.254) and
# DEPLOY_STUN_SERVER (default stun.l.google.com:19302); empty skips that lookup.
# It also raises net.core.rmem_max/wmem_max to 8 MiB (/etc/sysctl.d/60-srtwhep.conf).
# Run it as root or as a user with sudo. Running it again is safe: it only changes what differs.
set -euo pipefail

dry_run=0
mode=deploy
purge=0
public_ip=${PUBLIC_IP:-}
env_file=
metadata_url=${DEPLOY_METADATA_URL-http://169.254.169.254}
stun_server=${DEPLOY_STUN_SERVER-stun.l.google.com:19302}
ready_timeout=${READY_TIMEOUT:-90}
http_port=8889
# Published ports (DESIGN.md §1); 9998/tcp (metrics) stays on localhost on purpose.
fw_ports=(8890/udp 8889/tcp 8189/udp 8189/tcp)

# UDP socket buffers (srt.socketBuffer, webrtc.socketBuffer: 4 MiB) are
# capped by these host-wide limits, 212992 bytes on stock kernels; the
# limits are not per network namespace, so the host's apply in Docker too.
sock_buf_max=8388608
sysctl_conf=/etc/sysctl.d/60-srtwhep.conf
# Where the current limits are read; tests point it at a fake tree.
proc_sys=${DEPLOY_PROC_SYS:-/proc/sys}

usage() {
	sed -n '2,14s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

log() { echo "deploy.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}

need_arg() { [[ $2 -ge 2 ]] || die "$1 needs a value; see ./deploy.sh --help"; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--dry-run) dry_run=1 ;;
	--uninstall) mode=uninstall ;;
	--purge) purge=1 ;;
	--no-metadata) metadata_url= ;;
	--no-stun) stun_server= ;;
	--public-ip)
		need_arg "$1" $#
		public_ip=$2
		shift
		;;
	--public-ip=*) public_ip=${1#*=} ;;
	--env-file)
		need_arg "$1" $#
		env_file=$2
		shift
		;;
	--env-file=*) env_file=${1#*=} ;;
	--ready-timeout)
		need_arg "$1" $#
		ready_timeout=$2
		shift
		;;
	-h | --help) usage 0 ;;
	*)
		log "unknown argument '$1'"
		usage 2
		;;
	esac
	shift
done

[[ $purge -eq 0 || $mode == uninstall ]] || die "--purge only goes with --uninstall"
[[ $ready_timeout =~ ^[0-9]+$ ]] || die "--ready-timeout wants whole seconds, got '$ready_timeout'"

# The compose file sits next to this script; relative paths given by the
# caller are resolved before changing directory.
if [[ -n $env_file ]]; then
	env_dir=$(cd "$(dirname "$env_file")" 2>/dev/null && pwd) ||
		die "the directory of --env-file '$env_file' does not exist; create it first"
	env_file=$env_dir/$(basename "$env_file")
fi
cd "$(dirname "${BASH_SOURCE[0]}")"
env_file=${env_file:-$PWD/.env}

# run prints the command in dry-run mode and runs it otherwise.
run() {
	if [[ $dry_run -eq 1 ]]; then
		printf '[dry-run] would run:'
		printf ' %q' "$@"
		printf '\n'
	else
		"$@"
	fi
}

as_root=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		as_root=(sudo)
	elif [[ $dry_run -eq 0 ]]; then
		die "run this as root, or install sudo and run it as a user allowed to use it"
	fi
fi

is_ipv4() {
	local ip=$1 part parts
	[[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
	IFS=. read -r -a parts <<<"$ip"
	for part in "${parts[@]}"; do
		((10#$part <= 255)) || return 1
	done
}

# is_ip accepts IPv4, or anything made of hex digits, colons and dots with at
# least one colon (IPv6); the server validates the exact form.
is_ip() { is_ipv4 "$1" || [[ $1 =~ ^[0-9A-Fa-f:.]+$ && $1 == *:* ]]; }

is_private_ipv4() {
	case "$1" in
	0.* | 10.* | 127.* | 169.254.* | 192.168.*) return 0 ;;
	172.1[6-9].* | 172.2[0-9].* | 172.3[01].*) return 0 ;;
	100.6[4-9].* | 100.[7-9][0-9].* | 100.1[01][0-9].* | 100.12[0-7].*) return 0 ;;
	esac
	return 1
}

# --- public IP ---------------------------------------------------------------

# Every metadata probe prints an address or nothing. Timeouts are short: off
# that cloud, the link-local address does not answer at all.
curl_md=(curl -fsS --connect-timeout 1 --max-time 2)
probe_aws() {
	local token
	# IMDSv2 first; EC2-compatible services (Vultr, OpenStack) answer IMDSv1.
	if token=$("${curl_md[@]}" -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$metadata_url/latest/api/token" 2>/dev/null); then
		"${curl_md[@]}" -H "X-aws-ec2-metadata-token: $token" "$metadata_url/latest/meta-data/public-ipv4" 2>/dev/null || true
	else
		"${curl_md[@]}" "$metadata_url/latest/meta-data/public-ipv4" 2>/dev/null || true
	fi
}
probe_gcp() { "${curl_md[@]}" -H 'Metadata-Flavor: Google' "$metadata_url/computeMetadata/v1/instance/network-interfaces/0/access-configs/0/external-ip" 2>/dev/null || true; }
probe_azure() { "${curl_md[@]}" -H 'Metadata: true' "$metadata_url/metadata/instance/network/interface/0/ipv4/ipAddress/0/publicIpAddress?api-version=2021-02-01&format=text" 2>/dev/null || true; }
probe_digitalocean() { "${curl_md[@]}" "$metadata_url/metadata/v1/interfaces/public/0/ipv4/address" 2>/dev/null || true; }
probe_hetzner() { "${curl_md[@]}" "$metadata_url/hetzner/v1/metadata/public-ipv4" 2>/dev/null || true; }

# from_metadata asks the cloud metadata service; one connection attempt
# decides whether there is one, so a host outside any cloud waits 1 s, not 5.
from_metadata() {
	local probe candidate
	[[ -n $metadata_url ]] || return 0
	command -v curl >/dev/null 2>&1 || return 0
	curl -s -o /dev/null --connect-timeout 1 --max-time 2 "$metadata_url/" || return 0
	for probe in probe_aws probe_gcp probe_azure probe_digitalocean probe_hetzner; do
		candidate=$($probe | tr -d '[:space:]')
		if [[ -n $candidate ]] && is_ipv4 "$candidate"; then
			log "public IP (metadata: ${probe#probe_}): $candidate"
			echo "$candidate"
			return 0
		fi
	done
}

# from_stun asks a STUN server (RFC 8489 binding request) which address
# this host's UDP traffic comes from: what browsers will see, even behind a
# NAT without a metadata service. Only bash's /dev/udp, od and timeout.
from_stun() {
	local host port b txid req hex i type len val addr wait stun_fd
	[[ -n $stun_server ]] || return 0
	command -v od >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1 || return 0
	host=${stun_server%:*}
	port=${stun_server##*:}
	txid=
	req='\x00\x01\x00\x00\x21\x12\xa4\x42'
	for b in $(od -An -v -N12 -tx1 /dev/urandom); do
		txid+=$b
		req+="\\x$b"
	done
	# UDP may lose the request or the answer: send it again with a longer
	# wait each time, as a STUN client retransmits (RFC 8489 7.2.1), from
	# the same socket, so that the answer to an earlier send still counts
	# when it comes late (a busy host may take seconds to run dd).
	exec {stun_fd}<>"/dev/udp/$host/$port" 2>/dev/null || return 0
	for wait in 0.5 1 2 4; do
		{ printf '%b' "$req" >&"$stun_fd"; } 2>/dev/null || break
		hex=$(timeout "$wait" dd bs=1024 count=1 <&"$stun_fd" 2>/dev/null | od -An -v -tx1 | tr -d ' \n') || true
		# A binding success response (0x0101) to our transaction.
		[[ ${hex:0:4} == 0101 && ${hex:8:32} == "2112a442$txid" ]] && break
	done
	exec {stun_fd}<&-
	if [[ ${hex:0:4} != 0101 || ${hex:8:32} != "2112a442$txid" ]]; then
		# Said, so that a host whose STUN lookups fail (a firewall, a
		# lost datagram four times over) shows why the route source won.
		log "no STUN binding answer from $stun_server after 4 tries${hex:+ (last reply: ${#hex} hex digits, starting ${hex:0:16})}"
		return 0
	fi
	i=40
	while ((i + 8 <= ${#hex})); do
		type=${hex:i:4}
		len=$((16#${hex:i+4:4}))
		val=${hex:i+8:len*2}
		# XOR-MAPPED-ADDRESS (0x0020) or the old MAPPED-ADDRESS (0x0001), IPv4.
		if [[ ${val:2:2} == 01 && ($type == 0020 || $type == 0001) ]]; then
			addr=$((16#${val:8:8}))
			[[ $type == 0001 ]] || addr=$((addr ^ 0x2112a442))
			echo "$((addr >> 24 & 255)).$((addr >> 16 & 255)).$((addr >> 8 & 255)).$((addr & 255))"
			return 0
		fi
		i=$((i + 8 + ((len + 3) & ~3) * 2))
	done
}

# from_route prints the source address the kernel would use towards the
# internet (192.0.2.1 is a documentation address; no packet is sent).
from_route() {
	ip -4 -o route get 192.0.2.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' || true
}

find_public_ip() {
	local ip part parts
	if [[ -n $public_ip ]]; then
		IFS=, read -r -a parts <<<"$public_ip"
		for part in "${parts[@]}"; do
			is_ip "$part" || die "PUBLIC_IP '$public_ip': '$part' is not an IP address (hostnames do not work in ICE candidates)"
		done
		log "public IP (given): $public_ip"
		return
	fi
	ip=$(from_metadata)
	if [[ -z $ip ]]; then
		ip=$(from_stun)
		if [[ -n $ip ]] && is_ipv4 "$ip"; then
			log "public IP (STUN $stun_server): $ip"
		else
			ip=
		fi
	fi
	if [[ -z $ip ]]; then
		ip=$(from_route)
		if [[ -z $ip ]] || ! is_ipv4 "$ip"; then
			log "WARNING: no public IP found (no cloud metadata, no STUN answer, no IPv4 route); viewers behind Docker's NAT will not connect."
			log "set it with: PUBLIC_IP=<address browsers reach> ./deploy.sh"
			ip=
		elif is_private_ipv4 "$ip"; then
			log "WARNING: this host's own address $ip is private; only viewers on that network will connect."
			log "if the host has a public address (1:1 NAT, cloud VPC), rerun with: PUBLIC_IP=<public address> ./deploy.sh"
		else
			log "public IP (this host's route source): $ip"
		fi
	fi
	public_ip=$ip
}

# write_env sets PUBLIC_IP in the env file and keeps every other line; the
# file is only replaced when its content changes. On the first install it
# also generates the publish credentials every path requires
# (PUBLISH_USER/PUBLISH_PASS, which docker-compose.yml hands to the
# server): anyone who reaches the SRT port could publish otherwise. Lines
# already there are never overwritten, so a rerun keeps the encoders'
# URLs working, and an empty PUBLISH_PASS= opens publishing on purpose.
write_env() {
	local want tmp
	want="PUBLIC_IP=$public_ip"
	publish_user=publisher
	publish_pass=
	if [[ -f $env_file ]] && grep -q '^PUBLISH_PASS=' "$env_file"; then
		publish_pass=$(sed -n 's/^PUBLISH_PASS=//p' "$env_file" | tail -n 1)
		publish_user=$(sed -n 's/^PUBLISH_USER=//p' "$env_file" | tail -n 1)
	else
		# 32 hex digits: 128 bits, and none of the streamid's separators.
		publish_pass=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
		[[ ${#publish_pass} -eq 32 ]] || die "cannot read /dev/urandom for the publish secret"
	fi
	tmp=$(mktemp "$env_file.XXXXXX")
	{
		if [[ -f $env_file ]]; then grep -v '^PUBLIC_IP=' "$env_file" || true; fi
		if ! { [[ -f $env_file ]] && grep -q '^PUBLISH_PASS=' "$env_file"; }; then
			echo "PUBLISH_USER=$publish_user"
			echo "PUBLISH_PASS=$publish_pass"
		fi
		echo "$want"
	} >"$tmp"
	if [[ -f $env_file ]] && cmp -s "$tmp" "$env_file"; then
		rm -f "$tmp"
		log "$env_file already has $want"
	else
		# The publish secret is in it: readable by its owner only.
		chmod 0600 "$tmp"
		mv "$tmp" "$env_file"
		log "wrote $env_file: $want (publish credentials kept in it)"
	fi
}

# --- packages and Docker -----------------------------------------------------

apt_updated=0
apt_update() {
	[[ $apt_updated -eq 0 ]] || return 0
	run "${as_root[@]}" apt-get update
	apt_updated=1
}
apt_install() {
	apt_update
	run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# apt_has tells whether the package index offers a package.
apt_has() {
	local candidate
	candidate=$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p') || true
	[[ -n $candidate && $candidate != "(none)" ]]
}

docker_cmd=(docker)
compose=()

ensure_docker() {
	command -v docker >/dev/null 2>&1 || apt_install docker.io
	if [[ $dry_run -eq 1 ]]; then
		compose=(docker compose)
		log "[dry-run] would use 'docker compose', or 'docker-compose' (v1) where the plugin is not packaged (Debian 12)"
		return
	fi
	if ! docker info >/dev/null 2>&1; then
		if ! "${as_root[@]}" docker info >/dev/null 2>&1; then
			if command -v systemctl >/dev/null 2>&1; then
				"${as_root[@]}" systemctl enable --now docker || true
			fi
		fi
		"${as_root[@]}" docker info >/dev/null 2>&1 ||
			die "the Docker daemon does not answer; check 'systemctl status docker'"
		[[ ${#as_root[@]} -eq 0 ]] || docker_cmd=("${as_root[@]}" docker)
	fi
	if "${docker_cmd[@]}" compose version >/dev/null 2>&1; then
		compose=("${docker_cmd[@]}" compose)
		return
	fi
	# Ubuntu packages the v2 plugin as docker-compose-v2, Docker's own
	# repository as docker-compose-plugin; Debian 12 has neither, only the
	# Python docker-compose 1.29, which reads this compose file too.
	apt_update
	local pkg
	for pkg in docker-compose-v2 docker-compose-plugin; do
		if apt_has "$pkg"; then
			apt_install "$pkg"
			# Compose v2 builds through buildx when it is there.
			if ! "${docker_cmd[@]}" buildx version >/dev/null 2>&1 && apt_has docker-buildx; then
				apt_install docker-buildx
			fi
			compose=("${docker_cmd[@]}" compose)
			return
		fi
	done
	command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
	if [[ ${#docker_cmd[@]} -gt 1 ]]; then
		compose=("${as_root[@]}" docker-compose)
	else
		compose=(docker-compose)
	fi
}

# The image reports this version (srtwhep -version, srtwhep_build_info);
# docker-compose.yml hands it to the build. A copy without .git, or one git
# refuses to read, builds as "dev".
version=$(git -c safe.directory="$PWD" describe --tags --always --dirty 2>/dev/null || echo dev)

# compose_run runs a compose subcommand against this directory's file.
compose_run() {
	local args=() cmd=("${compose[@]}")
	[[ ! -f $env_file && $dry_run -eq 0 ]] || args=(--env-file "$env_file")
	# sudo starts from a clean environment, so the version goes in after it.
	if [[ ${cmd[0]} == sudo ]]; then
		cmd=(sudo env "SRTWHEP_VERSION=$version" "${cmd[@]:1}")
	else
		cmd=(env "SRTWHEP_VERSION=$version" "${cmd[@]}")
	fi
	run "${cmd[@]}" -f docker-compose.yml "${args[@]}" "$@"
}

# tune_kernel raises net.core.rmem_max/wmem_max to sock_buf_max, never
# lowers them, and keeps them across reboots in sysctl_conf.
tune_kernel() {
	local key cur lines=()
	for key in rmem_max wmem_max; do
		cur=$(cat "$proc_sys/net/core/$key" 2>/dev/null || echo 0)
		if ((cur < sock_buf_max)); then
			lines+=("net.core.$key=$sock_buf_max")
		else
			log "net.core.$key is already $cur (>= $sock_buf_max)"
		fi
	done
	[[ ${#lines[@]} -gt 0 ]] || return 0
	if [[ $dry_run -eq 1 ]]; then
		echo "[dry-run] would write $sysctl_conf: ${lines[*]}"
	else
		{
			echo '# srtwhep: UDP socket buffers for SRT ingest and WebRTC (deploy.sh)'
			printf '%s\n' "${lines[@]}"
		} | "${as_root[@]}" tee "$sysctl_conf" >/dev/null
	fi
	run "${as_root[@]}" sysctl -q -p "$sysctl_conf"
	log "socket buffer limits: ${lines[*]} (see deploy/README.md)"
}

# ufw_active is false when ufw is absent; only an active ufw needs rules.
ufw_active() {
	command -v ufw >/dev/null 2>&1 || return 1
	"${as_root[@]}" ufw status 2>/dev/null | grep -q '^Status: active'
}

# Docker's published ports bypass ufw, but the host-network variant and
# anything run without Docker need these rules.
firewall() {
	local action=$1 port
	if [[ $dry_run -eq 1 ]]; then
		command -v ufw >/dev/null 2>&1 &&
			echo "[dry-run] if ufw is active, would run: ufw $action allow PORT for ${fw_ports[*]}"
		return 0
	fi
	ufw_active || return 0
	for port in "${fw_ports[@]}"; do
		if [[ $action == add ]]; then
			"${as_root[@]}" ufw allow "$port" comment srtwhep >/dev/null
		else
			"${as_root[@]}" ufw delete allow "$port" >/dev/null || true
		fi
	done
	log "ufw: $action allow ${fw_ports[*]}"
}

wait_ready() {
	local url="http://127.0.0.1:$http_port/readyz" deadline
	if [[ $dry_run -eq 1 ]]; then
		echo "[dry-run] would wait up to ${ready_timeout}s for $url"
		return
	fi
	log "waiting for $url"
	deadline=$((SECONDS + ready_timeout))
	until curl -fsS --max-time 2 -o /dev/null "$url" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			compose_run logs --tail 50 srtwhep >&2 || true
			die "srtwhep was not ready after ${ready_timeout}s (logs above); fix the cause and run ./deploy.sh again"
		fi
		sleep 1
	done
}

print_usage_hint() {
	local host=${public_ip%%,*}
	host=${host:-$(hostname -I 2>/dev/null | awk '{print $1}')}
	host=${host:-HOST}
	[[ $host != *:* ]] || host="[$host]"
	local sid="publish:live/cam1" acl="#!::r=live/cam1,m=publish"
	if [[ -n $publish_pass ]]; then
		sid+=":$publish_user:$publish_pass"
		acl+=",u=$publish_user,s=$publish_pass"
	fi
	if [[ $dry_run -eq 1 ]]; then
		echo "[dry-run] then it would print:"
	else
		echo "srtwhep is running."
	fi
	cat <<MSG

Publish (the credentials are in $env_file; any path under them works):
  ffmpeg -re -i input.mp4 -c:v libx264 -preset veryfast -tune zerolatency -bf 0 -g 60 -b:v 2500k -f mpegts 'srt://$host:8890?streamid=$sid'
  or with the SRT access-control stream id:
  ffmpeg ... -f mpegts 'srt://$host:8890?streamid=$acl'

OBS (Settings > Stream > Service: Custom, Stream Key empty; x264 option bframes=0):
  Server: srt://$host:8890?streamid=$sid

Watch:
  http://$host:$http_port/live/cam1

Cloud firewalls (security groups) must allow: ${fw_ports[*]}.
MSG
	if [[ -z $publish_pass ]]; then
		echo "WARNING: PUBLISH_PASS is empty in $env_file: anyone who can reach the SRT port may publish."
	fi
}

# --- main --------------------------------------------------------------------

if [[ $mode == uninstall ]]; then
	if command -v docker >/dev/null 2>&1; then
		ensure_docker
		down=(down --remove-orphans)
		[[ $purge -eq 0 ]] || down+=(--rmi all)
		compose_run "${down[@]}"
	else
		log "Docker is not installed; no container to stop"
	fi
	run rm -f "$env_file"
	# The limits stay raised until reboot; only the file that keeps them goes.
	[[ ! -e $sysctl_conf ]] || run "${as_root[@]}" rm -f "$sysctl_conf"
	firewall delete
	if [[ $dry_run -eq 1 ]]; then
		:
	elif [[ $purge -eq 1 ]]; then
		log "removed srtwhep and its image"
	else
		log "removed srtwhep; the image is kept (--purge removes it)"
	fi
	exit 0
fi

# curl asks the metadata service now and waits for /readyz later.
command -v curl >/dev/null 2>&1 || apt_install curl ca-certificates
find_public_ip
write_env
ensure_docker
tune_kernel
firewall add
compose_run up -d --build
wait_ready
print_usage_hint
