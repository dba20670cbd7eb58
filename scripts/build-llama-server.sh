#!/usr/bin/env bash
# Build llama.cpp's llama-server from the llama-cpp-python sdist (PyPI only) into
# ~/.cache/voicetrace/llama.cpp/<version>/. Built once per machine; later calls return at once.
# GGML_NATIVE=OFF: a native build died with "Illegal instruction" on these machines.
set -euo pipefail
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${VOICETRACE_CACHE:-$HOME/.cache/voicetrace}"
DEST="$CACHE/llama.cpp/$VERSION"
if [ -x "$DEST/bin/llama-server" ]; then
  echo "llama-server $VERSION: cached at $DEST/bin/llama-server"
  exit 0
fi
WORK="$CACHE/build/llama_cpp_python-$VERSION"
mkdir -p "$CACHE/build"
if [ ! -d "$WORK/vendor/llama.cpp" ]; then
  echo "llama-server: fetching llama-cpp-python==$VERSION sdist from PyPI"
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$VERSION"
  tar -xzf "$tmp"/llama_cpp_python-*.tar.gz -C "$CACHE/build"
  rm -rf "$tmp"
fi
echo "llama-server: building (about 6 minutes on 2 cores, once per machine)"
cd "$WORK/vendor/llama.cpp"
cmake -B build -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DCMAKE_BUILD_TYPE=Release > "$CACHE/build/llama-cmake.log" 2>&1 \
  || { tail -20 "$CACHE/build/llama-cmake.log"; exit 1; }
cmake --build build --target llama-server -j"$(nproc)" > "$CACHE/build/llama-build.log" 2>&1 \
  || { tail -30 "$CACHE/build/llama-build.log"; exit 1; }
# The binary links shared libraries that sit beside it in build/bin; keep them together.
mkdir -p "$DEST.tmp/bin"
cp -a build/bin/. "$DEST.tmp/bin/"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
"$DEST/bin/llama-server" --version 2>&1 | head -2 || true
echo "llama-server $VERSION: built at $DEST/bin/llama-server"
