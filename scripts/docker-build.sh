#!/bin/sh
# The build steps of the Dockerfile's build stage, in one place: the
# Dockerfile runs this script, and cmd/dhsi/docker_test.go runs it on the
# host (no Docker engine there), so the two cannot drift.
#
#   VERSION  the version dhsi --version prints (default dev)
#   OUT      where the binary goes (default /out/dhsi)
#
# DuckDB is linked through cgo: the binary needs glibc and the C++ runtime
# (libstdc++, libgcc_s) and nothing else, which the image's runtime base,
# gcr.io/distroless/cc-debian12, carries. The test checks that list.
set -eu
VERSION="${VERSION:-dev}"
OUT="${OUT:-/out/dhsi}"
mkdir -p "$(dirname "$OUT")"
CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o "$OUT" ./cmd/dhsi
