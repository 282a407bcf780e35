# dreamgate in a container: a static binary on a small base, run as a
# non-root user, with all state in one volume.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t dreamgate .
#   docker compose up        (compose.yaml: the environment variables)

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

FROM alpine:3.22
# CA certificates for HTTPS providers, time zones for dream.timezone, and
# busybox wget for the health check.
RUN apk add --no-cache ca-certificates tzdata \
 && adduser -D -u 10001 -h /home/dreamgate dreamgate \
 && install -d -o dreamgate -g dreamgate -m 0700 /home/dreamgate/.dreamgate
COPY --from=build /out/dreamgate /usr/local/bin/dreamgate
USER dreamgate
ENV HOME=/home/dreamgate
WORKDIR /home/dreamgate
# Config (optional), sessions, workspace and memory repository.
VOLUME ["/home/dreamgate/.dreamgate"]
# /healthz answers 200 only while the gateway serves (gateway.healthAddr,
# 127.0.0.1:18790 by default, is inside the container).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD wget -q -O /dev/null http://127.0.0.1:18790/healthz || exit 1
ENTRYPOINT ["dreamgate"]
CMD ["gateway"]
