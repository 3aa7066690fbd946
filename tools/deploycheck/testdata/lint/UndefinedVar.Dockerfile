FROM debian:bookworm-slim
ENV DIR=/opt/$APPNAME
