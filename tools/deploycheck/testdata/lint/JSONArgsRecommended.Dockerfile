FROM debian:bookworm-slim
CMD echo hi
