FROM debian:bookworm-slim
ENV A 1
