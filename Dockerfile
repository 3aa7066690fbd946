# srtwhep: SRT in, WHEP/WebRTC out. Multi-stage: cgo build against Debian's
# libsrt, then a slim runtime with only the shared libraries it links.
# No BuildKit-only syntax (RUN --mount, heredocs): Debian 12's docker-compose
# 1.29 builds with the classic builder. Linted offline by `make test` (tools/).

FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsrt-openssl-dev pkg-config \
      libavcodec-dev libswresample-dev libswscale-dev libavutil-dev libopus-dev libopusfile-dev \
 && rm -rf /var/lib/apt/lists/*
# Use the image's Go; never download another toolchain during a build.
ENV GOTOOLCHAIN=local CGO_ENABLED=1 GOFLAGS=-buildvcs=false
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context has no .git to ask, so the version comes in from
# outside: docker-compose.yml passes SRTWHEP_VERSION, which deploy.sh sets
# from git describe. Declared this late so a new version reuses every
# layer above.
ARG VERSION=dev
RUN go build -trimpath -ldflags="-s -w -X github.com/srtwhep/srtwhep/pkg/version.Version=${VERSION}" -o /out/srtwhep ./cmd/srtwhep

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsrt1.5-openssl ca-certificates \
      libavcodec59 libswresample4 libswscale6 libavutil57 libopus0 libopusfile0 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin srtwhep
COPY --from=build /out/srtwhep /usr/local/bin/srtwhep
COPY configs/srtwhep.yml /etc/srtwhep/srtwhep.yml
# The image links Debian's GPL-built libavcodec; the notice says what that
# means for whoever passes the image on.
COPY LICENSE THIRD_PARTY_NOTICES.md /usr/share/doc/srtwhep/
# SRT ingest, HTTP (WHEP, player, health), WebRTC ICE UDP mux + ICE-TCP, metrics.
EXPOSE 8890/udp 8889/tcp 8189/udp 8189/tcp 9998/tcp
USER 10001:10001
# The binary probes itself, so the image needs no curl. The port is
# http.listen's; change both together when a mounted config moves it.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/srtwhep", "-probe", "http://127.0.0.1:8889/healthz"]
ENTRYPOINT ["/usr/local/bin/srtwhep"]
CMD ["-config", "/etc/srtwhep/srtwhep.yml"]
