"""`voicetrace doctor`: the table of the embedded default's components, exit 1 when a required one is
missing, 0 when all are there (the real CLI, with a cache folder made for the test)."""

from __future__ import annotations

import os

from voicetrace.components import LLAMA_CPP_PYTHON_VERSION

from tests.unit.test_cli_errors import run_cli


def _env(cache, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VOICETRACE_LLAMA_SERVER", "VOICETRACE_LLM_GGUF")}
    return dict(env, VOICETRACE_CACHE=str(cache), COLUMNS="200", **extra)


def _row(stdout: str, component: str) -> list[str]:
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells and cells[0] == component:
            return cells
    raise AssertionError(f"no row for {component!r} in:\n{stdout}")


def test_an_empty_cache_cannot_run_the_embedded_default(tmp_path):
    result = run_cli("doctor", env=_env(tmp_path / "cache"))
    assert result.returncode == 1, result.stderr
    assert "voicetrace components (embedded default)" in result.stdout
    assert _row(result.stdout, "llama-server")[1] == "missing"
    assert _row(result.stdout, "LLM SmolLM2-135M-Instruct.Q4_1.gguf")[1] == "missing"
    assert _row(result.stdout, "pipecat-ai")[1] == "found"  # packages come from the environment, not the cache
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "missing: LLM SmolLM2-135M-Instruct.Q4_1.gguf, llama-server" in errors[0]


def test_every_required_component_found_is_ready(tmp_path):
    cache = tmp_path / "cache"
    server = cache / "llama.cpp" / LLAMA_CPP_PYTHON_VERSION / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text("#!/bin/sh\necho 'version: 4242 (test)'\n")
    server.chmod(0o755)
    (cache / "models").mkdir()
    (cache / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    result = run_cli("doctor", env=_env(cache))
    assert result.returncode == 0, result.stdout + result.stderr
    assert _row(result.stdout, "llama-server")[1:3] == ["found", "4242 (test)"]
    assert _row(result.stdout, "whisper base, multilingual (optional)")[1] == "missing"  # optional: still ready
    assert "ready: the embedded default can run" in result.stdout
