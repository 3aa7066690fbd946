# escape=`
# check=skip=LegacyKeyValueFormat;experimental=InvalidDefinitionDescription

FROM debian:bookworm-slim AS base
ENV A 1
RUN echo a `
  && echo b
# check=skip=JSONArgsRecommended
CMD echo hi
# badcomment about stage
FROM base as Second
ENTRYPOINT echo x
# check=skip=all
FROM --platform=linux/arm64 base AS third
ENV X=$UNDEF
