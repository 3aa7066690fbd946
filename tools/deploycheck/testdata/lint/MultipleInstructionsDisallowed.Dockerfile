FROM debian:bookworm-slim
ENTRYPOINT ["/bin/a"]
ENTRYPOINT ["/bin/b"]
