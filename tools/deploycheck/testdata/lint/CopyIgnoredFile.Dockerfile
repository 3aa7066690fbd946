FROM debian:bookworm-slim
COPY secret.env /etc/app.env
