# syntax=docker/dockerfile:1
# Build: DuckDB is linked through cgo, so the build stage needs gcc/g++.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# the build steps live in scripts/docker-build.sh, which the test suite
# runs too (cmd/dhsi/docker_test.go)
RUN VERSION=${VERSION} OUT=/out/dhsi sh scripts/docker-build.sh

# Run: the binary only, on a base that carries the C++ runtime DuckDB needs,
# as a non-root user.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/dhsi /usr/local/bin/dhsi
USER nonroot:nonroot
WORKDIR /data
EXPOSE 5433
# Inside a container the server must listen beyond loopback, which DHSI
# allows only with passwords: pass --user name:password or --users-file.
ENTRYPOINT ["/usr/local/bin/dhsi"]
CMD ["serve", "--store", "/data", "--listen", "0.0.0.0:5433"]
