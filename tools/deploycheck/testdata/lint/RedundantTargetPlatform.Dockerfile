FROM --platform=$TARGETPLATFORM debian:bookworm-slim
RUN true
