FROM debian:bookworm-slim
WORKDIR app
