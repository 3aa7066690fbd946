FROM debian:bookworm-slim AS context
RUN true
