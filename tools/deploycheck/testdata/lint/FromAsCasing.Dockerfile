FROM debian:bookworm-slim as base
RUN true
