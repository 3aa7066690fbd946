ARG BASE=debian
ARG VARIANT
ARG DB_PASSWORD
FROM ${BASE}:bookworm-slim AS build
ARG VARIANT
ARG BUILD_VERSION=1
ENV GOPATH=/go OTHER=$GOPAHT
WORKDIR /src
SHELL ["/bin/bash", "-c"]
CMD echo hi

FROM build AS next
WORKDIR rel
ENTRYPOINT echo hi
CMD ["a"]
CMD ["b"]
HEALTHCHECK NONE
HEALTHCHECK CMD true
EXPOSE 80/Tcp 53/udp :90 1.2.3.4::99 ${PORT}
LABEL a b
ENV AUTH_TOKEN=x PUBLIC_KEY=y
ARG password
ARG VERSION_FILE_TOKEN
COPY --from=build /x /y
ADD https://example.com/a.tgz /a
COPY $VARIANT/x ${UNDEF:-d}/ /z/

FROM --platform=$BUILDPLATFORM scratch AS Final
COPY --from=next /y /y
FROM --platform=linux/arm64 debian AS arm64builder
WORKDIR $HOME/x
FROM --platform=${TARGETPLATFORM} ${BASE}:${VARIANT:-bookworm} AS t
user nobody
# check=skip=JSONArgsRecommended
CMD echo skipped
ENV key=1
ARG TARGETOS
RUN echo $TARGETOS $BUILDARCH
FROM build
ENV X ${BUILD_VERSION}
ONBUILD RUN true
STOPSIGNAL SIGTERM
VOLUME /data
USER $USERNAME
