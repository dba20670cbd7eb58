#!/usr/bin/env bash
# Test-only system packages: headless Chromium (Debian/Ubuntu package `chromium`) for the tests that
# open the HTML report in a real browser. Installed once; a no-op when it is already there.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "== chromium: installed"
  exit 0
fi
echo "== chromium (apt-get; for the HTML report browser tests)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
