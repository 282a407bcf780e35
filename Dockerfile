# dreamgate in a container: a static binary on a small base, run as a
# non-root user, with all state in one volume.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t dreamgate .
#   docker build --target mcp -t dreamgate:mcp .   (with Node and uv, for MCP servers)
#   docker compose up        (compose.yaml: the environment variables)
#
# .dockerignore keeps .git, .env and config.json out of the build context.

FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
# The same target and flags as `make build` (a test in cmd/dreamgate
# compares the two); the build arguments are the version's one source.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildDate=${BUILD_DATE}" -o /out/dreamgate ./cmd/dreamgate

FROM alpine:3.22 AS base
# CA certificates for HTTPS providers, time zones for dream.timezone, and
# busybox wget for the health check.
RUN apk add --no-cache ca-certificates tzdata \
 && adduser -D -u 10001 -h /home/dreamgate dreamgate \
 && install -d -o dreamgate -g dreamgate -m 0700 /home/dreamgate/.dreamgate
COPY --from=build /out/dreamgate /usr/local/bin/dreamgate
ENV HOME=/home/dreamgate
WORKDIR /home/dreamgate
# Config (optional), sessions, workspace and memory repository.
VOLUME ["/home/dreamgate/.dreamgate"]
# /healthz, /readyz and /metrics listen on every interface of the
# container, so that a published port reaches them (gateway.healthAddr is
# 127.0.0.1:18790 outside a container); compose.yaml publishes the port on
# the host's loopback only.
ENV DREAMGATE_HEALTH_ADDR=0.0.0.0:18790
EXPOSE 18790
# /healthz answers 200 only while the gateway serves.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD wget -q -O /dev/null http://127.0.0.1:18790/healthz || exit 1
ENTRYPOINT ["dreamgate"]
CMD ["gateway"]

# The image with what the MCP servers of docs/mcp.md are started with:
# Node and npm (npx) and uv (uvx). About 70 MB more, so it is a target of
# its own: docker build --target mcp, or `target: mcp` in compose.yaml.
FROM base AS mcp
RUN apk add --no-cache nodejs npm uv
USER dreamgate

# The default image (the last stage): without Node and uv.
FROM base
USER dreamgate
