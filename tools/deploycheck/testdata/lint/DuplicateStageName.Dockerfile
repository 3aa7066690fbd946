FROM debian:bookworm-slim AS a
RUN true
FROM debian:bookworm-slim AS a
RUN true
