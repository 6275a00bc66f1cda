# syntax=docker/dockerfile:1
#
# mcpmux container images (docs/operations.md, "Containers"):
#
#   docker build --target full -t mcpmux .        the default: runs the shipped config
#   docker build --target slim -t mcpmux:slim .   mcpmux alone, for HTTP/SSE downstreams
#
# Both serve Streamable HTTP on 0.0.0.0:8080 and need MCPMUX_TOKEN: without
# it mcpmux refuses to start (a non-loopback bind without a token). The
# config directory is /config; mount yours over it.
# Stamp the version with --build-arg VERSION=$(git describe --tags)
# --build-arg COMMIT=$(git rev-parse HEAD); the build context has no .git.

ARG GO_IMAGE=golang:1.26-bookworm
ARG NODE_IMAGE=node:24-bookworm-slim
ARG SLIM_IMAGE=gcr.io/distroless/static-debian12:nonroot

# builder: the static binary, built by the same script as in CI. It runs on
# the build machine's platform and cross-compiles for the target's.
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS builder
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG COMMIT=""
ARG TARGETOS
ARG TARGETARCH
RUN VERSION="${VERSION}" COMMIT="${COMMIT}" GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" \
    bash scripts/build.sh /out

# slim: the binary on distroless (no shell, no package manager), as the
# nonroot user. Its default config is the built-in fetch tool with the
# shipped settings (mcpmux.yaml: its rewrite rules): mount a config whose
# servers are urls (or static binaries you add).
FROM ${SLIM_IMAGE} AS slim
COPY --from=builder /out/mcpmux /usr/local/bin/mcpmux
COPY config/schema/ /config/schema/
COPY config/mcpmux.yaml /config/mcpmux.yaml
COPY config/tool/fetch.yaml /config/tool/fetch.yaml
ENV MCPMUX_CONFIG=/config
USER 65532:65532
EXPOSE 8080
# mcpmux healthcheck: there is no curl in this image. It probes
# http://127.0.0.1:8080/healthz, or $MCPMUX_HEALTHCHECK_URL. No
# --start-interval: buildah and podman before mid-2024 (those of Debian 12
# and Ubuntu 24.04) reject it, and Docker 25+ probes every 5s during
# --start-period without it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/mcpmux", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mcpmux"]
CMD ["--http", "0.0.0.0:8080"]

# full: Node.js/npm for the npx servers and Debian's chromium for the
# playwright server, so the shipped config/ runs as it is. tini is PID 1:
# it reaps the browser's orphaned processes and passes signals to mcpmux,
# which stops its children's process groups itself.
FROM ${NODE_IMAGE} AS full
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates chromium fonts-liberation tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --user-group --shell /usr/sbin/nologin mcpmux
ENV MCPMUX_CONFIG=/config \
    HOME=/home/mcpmux \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
# The shipped config, without the Go sources that share its directory. Root
# owns it (mcpmux only reads it); the filesystem server's workspace is the
# user's to write.
COPY config/tool/ /config/tool/
USER mcpmux
WORKDIR /home/mcpmux
# Fill the npx cache with the packages the shipped config pins, so that a
# container starts its servers without downloading them. This comes before
# the binary: a rebuild for a change of code keeps this layer.
RUN for pkg in $(grep -Eho '(@[a-z0-9-]+/)?[a-z0-9][a-z0-9._-]*@[0-9][0-9.]*' /config/tool/*.yaml); do \
      npm exec --yes --package="$pkg" -- true || exit 1; \
    done
COPY config/schema/ /config/schema/
COPY config/mcpmux.yaml config/playwright.json /config/
COPY --chown=10001:10001 config/workspace/ /config/workspace/
COPY --from=builder /out/mcpmux /usr/local/bin/mcpmux
# Start every server once, as "mcpmux check" does, to prove the image runs
# the config.
RUN mcpmux check
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["mcpmux", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "mcpmux"]
CMD ["--http", "0.0.0.0:8080"]
