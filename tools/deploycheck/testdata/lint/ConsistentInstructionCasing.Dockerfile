FROM debian:bookworm-slim
RUN true
run true
