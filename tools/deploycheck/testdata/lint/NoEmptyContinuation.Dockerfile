FROM debian:bookworm-slim
RUN echo a \

  && echo b
