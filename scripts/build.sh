#!/usr/bin/env bash
# Builds the release binary of mcpmux: static (CGO_ENABLED=0, so it runs on
# any Linux base image, distroless included), with -trimpath, and with its
# version and commit stamped for "mcpmux version". The Dockerfile's builder
# stage runs this script, and so does .ci/run.
#
#   scripts/build.sh OUTDIR          writes OUTDIR/mcpmux
#
# VERSION and COMMIT come from the environment (the Dockerfile passes its
# build args), else from git: the nearest v* tag (git describe) and HEAD,
# "+dirty" when the work tree has changes; else "dev" and nothing (then the
# binary reports what the Go toolchain recorded). GOOS and GOARCH pass
# through to go build, for cross-building.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/build.sh OUTDIR" >&2
  exit 2
fi
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."

version=${VERSION:-}
commit=${COMMIT:-}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  dirty=""
  [ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty="+dirty"
  [ -n "$version" ] || version=$(git describe --tags --match 'v[0-9]*' 2>/dev/null || true)
  [ -z "$version" ] || [ -n "${VERSION:-}" ] || version+=$dirty
  [ -n "$commit" ] || commit=$(git rev-parse HEAD)$dirty
fi
version=${version:-dev}

stamp=github.com/mcpmux/mcpmux/cli
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X ${stamp}.version=${version} -X ${stamp}.commit=${commit}" \
  -o "$out/mcpmux" .
echo "built $out/mcpmux: version ${version}, commit ${commit:-unknown}"
