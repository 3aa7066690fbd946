FROM debian:bookworm-slim AS Base
RUN true
