FROM --platform=linux/amd64 debian:bookworm-slim
RUN true
