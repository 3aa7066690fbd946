FROM ${REGISTRY}debian:bookworm-slim
RUN true
