FROM debian:bookworm-slim
EXPOSE 127.0.0.1:8080:80
