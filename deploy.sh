#!/usr/bin/env bash
# deploy.sh — run srtwhep with Docker Compose on this host.
#
#   ./deploy.sh                      detect the public IP, build, start, wait until ready
#   PUBLIC_IP=203.0.113.7 ./deploy.sh  use this address in ICE candidates
#   ./deploy.sh --public-ip 203.0.113.7
#   ./deploy.sh --dry-run            print what would be done; change nothing, contact nothing
#
# Installs docker.io and a compose plugin from the distribution's packages when
# they are missing (needs root). Writes PUBLIC_IP to .env next to this script,
# where docker compose picks it up.
set -euo pipefail

dry_run=0
public_ip=${PUBLIC_IP:-}
ready_timeout=${READY_TIMEOUT:-90}
http_port=8889

usage() {
	sed -n '2,11s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

while [[ $# -gt 0 ]]; do
	case "$1" in
	--dry-run) dry_run=1 ;;
	--public-ip)
		[[ $# -ge 2 ]] || usage 2
		public_ip=$2
		shift
		;;
	--public-ip=*) public_ip=${1#*=} ;;
	-h | --help) usage 0 ;;
	*)
		echo "deploy.sh: unknown argument '$1'" >&2
		usage 2
		;;
	esac
	shift
done

cd "$(dirname "${BASH_SOURCE[0]}")"

log() { echo "deploy.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}

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

is_ipv4() {
	local ip=$1 part parts
	[[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
	IFS=. read -r -a parts <<<"$ip"
	for part in "${parts[@]}"; do
		((10#$part <= 255)) || return 1
	done
}

is_private_ipv4() {
	case "$1" in
	10.* | 127.* | 169.254.* | 192.168.*) return 0 ;;
	172.1[6-9].* | 172.2[0-9].* | 172.3[01].*) return 0 ;;
	100.6[4-9].* | 100.[7-9][0-9].* | 100.1[01][0-9].* | 100.12[0-7].*) return 0 ;;
	esac
	return 1
}

apt_updated=0
apt_install() {
	[[ $dry_run -eq 1 || $(id -u) -eq 0 ]] || die "missing: $*; run as root, or install it: apt-get install -y $*"
	if [[ $apt_updated -eq 0 ]]; then
		run apt-get update
		apt_updated=1
	fi
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# apt_has tells whether the package index offers a package (needs a prior apt-get update).
apt_has() {
	local candidate
	candidate=$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p') || true
	[[ -n $candidate && $candidate != "(none)" ]]
}

# --- tools -----------------------------------------------------------------

if ! command -v curl >/dev/null 2>&1; then
	apt_install curl ca-certificates
fi

if ! command -v docker >/dev/null 2>&1; then
	apt_install docker.io
fi

if [[ $dry_run -eq 0 ]] && ! docker info >/dev/null 2>&1; then
	if command -v systemctl >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
		run systemctl enable --now docker
	fi
	docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable; start it (systemctl start docker) or run as a user in the docker group"
fi

compose=()
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
else
	# Docker's own repository calls it docker-compose-plugin, Ubuntu calls it
	# docker-compose-v2; Debian 12 only has the Python docker-compose 1.29,
	# which also reads this compose file.
	if [[ $(id -u) -eq 0 && $dry_run -eq 0 ]]; then
		run apt-get update
		apt_updated=1
	fi
	for pkg in docker-compose-plugin docker-compose-v2; do
		if apt_has "$pkg"; then
			apt_install "$pkg"
			compose=(docker compose)
			break
		fi
	done
	if [[ ${#compose[@]} -eq 0 ]]; then
		command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
		compose=(docker-compose)
	fi
fi

# --- public IP ---------------------------------------------------------------

# Each probe prints an address or nothing; short timeouts because on a host
# outside that cloud the link-local address does not answer at all.
md=169.254.169.254
curl_md=(curl -fsS --connect-timeout 1 --max-time 2)
probe_aws() {
	local token
	token=$("${curl_md[@]}" -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "http://$md/latest/api/token") || return 0
	"${curl_md[@]}" -H "X-aws-ec2-metadata-token: $token" "http://$md/latest/meta-data/public-ipv4" || true
}
probe_gcp() { "${curl_md[@]}" -H 'Metadata-Flavor: Google' "http://$md/computeMetadata/v1/instance/network-interfaces/0/access-configs/0/external-ip" || true; }
probe_azure() { "${curl_md[@]}" -H 'Metadata: true' "http://$md/metadata/instance/network/interface/0/ipv4/ipAddress/0/publicIpAddress?api-version=2021-02-01&format=text" || true; }
probe_digitalocean() { "${curl_md[@]}" "http://$md/metadata/v1/interfaces/public/0/ipv4/address" || true; }
probe_hetzner() { "${curl_md[@]}" "http://$md/hetzner/v1/metadata/public-ipv4" || true; }

# probe_local looks at the source address the kernel would use for a public
# destination; no packet is sent.
probe_local() {
	local src
	src=$(ip -4 -o route get 192.0.2.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p') || true
	if [[ -n $src ]] && ! is_private_ipv4 "$src"; then
		echo "$src"
	fi
}

if [[ -n $public_ip ]]; then
	is_ipv4 "$public_ip" || die "PUBLIC_IP '$public_ip' is not an IPv4 address"
	log "public IP (given): $public_ip"
elif [[ $dry_run -eq 1 ]]; then
	log "[dry-run] would ask the cloud metadata service at $md (AWS, GCP, Azure, DigitalOcean, Hetzner) for the public IP,"
	local_ip=$(probe_local)
	log "[dry-run] then fall back to this host's own public address: ${local_ip:-(none: it has only private addresses)}"
else
	for probe in probe_aws probe_gcp probe_azure probe_digitalocean probe_hetzner probe_local; do
		candidate=$($probe | tr -d '[:space:]')
		if [[ -n $candidate ]] && is_ipv4 "$candidate"; then
			public_ip=$candidate
			log "public IP (${probe#probe_}): $public_ip"
			break
		fi
	done
	if [[ -z $public_ip ]]; then
		log "no public IP found; viewers outside this host's networks will not connect."
		log "set it with: PUBLIC_IP=<address browsers reach> ./deploy.sh"
	fi
fi

# --- .env --------------------------------------------------------------------

env_line="PUBLIC_IP=$public_ip"
if [[ $dry_run -eq 1 ]]; then
	echo "[dry-run] would write .env with: $env_line"
else
	{
		if [[ -f .env ]]; then grep -v '^PUBLIC_IP=' .env || true; fi
		echo "$env_line"
	} >.env.tmp
	mv .env.tmp .env
fi

# --- start -------------------------------------------------------------------

run "${compose[@]}" up -d --build

if [[ $dry_run -eq 1 ]]; then
	echo "[dry-run] would wait up to ${ready_timeout}s for http://127.0.0.1:$http_port/readyz"
else
	log "waiting for http://127.0.0.1:$http_port/readyz"
	deadline=$((SECONDS + ready_timeout))
	until curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$http_port/readyz" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			"${compose[@]}" logs --tail 50 srtwhep >&2 || true
			die "srtwhep was not ready after ${ready_timeout}s (logs above)"
		fi
		sleep 1
	done
fi

host=${public_ip:-$(hostname -I 2>/dev/null | awk '{print $1}')}
host=${host:-HOST}
if [[ $dry_run -eq 1 ]]; then
	status="[dry-run] then it would print:"
else
	status="srtwhep is running."
fi
cat <<MSG

$status

Publish (ffmpeg):
  ffmpeg -re -i input.mp4 -c:v libx264 -preset veryfast -tune zerolatency -bf 0 -g 60 -b:v 2500k \\
    -f mpegts 'srt://$host:8890?streamid=publish:live/cam1'

Watch:
  http://$host:$http_port/live/cam1          (player page)
  http://$host:$http_port/live/cam1/whep     (WHEP endpoint for other players)

Open these ports in the firewall: 8890/udp (SRT), 8889/tcp (HTTP), 8189/udp and 8189/tcp (WebRTC).
MSG
