FROM debian:bookworm-slim
ARG API_TOKEN=x
