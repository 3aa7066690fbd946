FROM debian:bookworm-slim
MAINTAINER someone
