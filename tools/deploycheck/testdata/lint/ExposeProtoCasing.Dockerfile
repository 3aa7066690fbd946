FROM debian:bookworm-slim
EXPOSE 8890/UDP
