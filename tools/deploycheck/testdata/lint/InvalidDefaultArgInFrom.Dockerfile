ARG TAG
FROM debian:${TAG}
RUN true
