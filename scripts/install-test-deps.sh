#!/usr/bin/env bash
# Test-only system packages, installed once (a no-op when they are there):
# - headless Chromium (Debian/Ubuntu package `chromium`) for the tests that open the HTML report in a browser;
# - alsa-utils for its recordings of human speech (/usr/share/sounds/alsa), the source of the speech-edge
#   corpus (tests/data/edges/make_edges_corpus.py; the clips it derives are committed, so tests need only
#   this to regenerate them).
set -euo pipefail
missing=()
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  missing+=(chromium)
fi
[ -f /usr/share/sounds/alsa/Front_Center.wav ] || missing+=(alsa-utils)
if [ ${#missing[@]} -eq 0 ]; then
  echo "== chromium, alsa-utils: installed"
  exit 0
fi
echo "== ${missing[*]} (apt-get; browser tests, speech-edge corpus source)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
