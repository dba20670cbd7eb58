#!/usr/bin/env bash
# Build Jaeger (all-in-one, v2 binary) from the Go module proxy into ~/.cache/voicetrace/bin/.
# Built once per machine; later calls return at once. Go's module and build caches live under
# ~/.cache/voicetrace/go so a rebuild (e.g. another version) reuses what was downloaded.
set -euo pipefail
VERSION="${JAEGER_VERSION:-v1.76.0}"
CACHE="${VOICETRACE_CACHE:-$HOME/.cache/voicetrace}"
DEST="$CACHE/bin/jaeger-$VERSION"
LINK="$CACHE/bin/jaeger"
if [ -x "$DEST" ]; then
  ln -sfn "jaeger-$VERSION" "$LINK"
  echo "jaeger $VERSION: cached at $DEST"
  exit 0
fi
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [ ! -x "$GO" ]; then
  echo "jaeger: Go is needed to build it (https://go.dev/dl/), or run it with Docker (see README)" >&2
  exit 1
fi
export GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build"
export CGO_ENABLED=0
tmp="$CACHE/bin/.jaeger-build.$$"
mkdir -p "$tmp" "$CACHE/go"
trap 'rm -rf "$tmp"' EXIT
echo "jaeger $VERSION: building from the Go module proxy (several minutes cold, once per machine)"
start=$(date +%s)
# `go install ...@version` refuses modules whose go.mod has replace directives (jaeger's does), so
# fetch the module from the proxy and build inside it: its own go.mod/go.sum, exactly as upstream.
log="$CACHE/go/jaeger-build.log"
{
  src=$("$GO" mod download -json "github.com/jaegertracing/jaeger@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "no module source for jaeger@$VERSION"; exit 1; }
  cd "$src"
  "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/jaeger" ./cmd/jaeger
} > "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
mv "$tmp/jaeger" "$DEST"
ln -sfn "jaeger-$VERSION" "$LINK"
echo "jaeger $VERSION: built at $DEST in $(( $(date +%s) - start )) s"
