# check=skip=LegacyKeyValueFormat;experimental=InvalidDefinitionDescription

# escape=`
FROM debian:bookworm-slim AS base
ENV A 1
RUN echo a `
  && echo b
CMD echo hi
# badcomment about stage
FROM base as Second
ENTRYPOINT ["x"]
