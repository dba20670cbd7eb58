#!/usr/bin/env bash
# Test-only system packages, installed once (a no-op when they are there):
# - headless Chromium (Debian/Ubuntu package `chromium`) for the tests that open the HTML report;
# - Prometheus with promtool (package `prometheus`) for the metrics tests: they start their own
#   Prometheus on a free loopback port with a temporary config and storage (never the system service);
# - alsa-utils for its recordings of human speech (/usr/share/sounds/alsa): the speech-edge corpus's
#   caller lines are made from them at test time (GPL-2: not committed; tests/data/edges/).
set -euo pipefail
missing=()
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "== chromium: installed"
else
  missing+=(chromium)
fi
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  echo "== prometheus: installed"
else
  missing+=(prometheus)
fi
if [ -f /usr/share/sounds/alsa/Front_Center.wav ]; then
  echo "== alsa-utils: installed"
else
  missing+=(alsa-utils)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "== ${missing[*]} (apt-get; browser, Prometheus and speech-edge tests)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
# policy-rc.d-style environments refuse to start the packaged service; the tests never use it.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
