"""Bad input gets one clear line and a non-zero exit, never a traceback (the real CLI)."""

from __future__ import annotations

import subprocess

from tests.conftest import VOICETRACE


def run_cli(*args, env=None):
    return subprocess.run([str(VOICETRACE), *args], capture_output=True, text=True, env=env, timeout=120)


def assert_one_line_error(result, code, needle):
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr


def test_missing_call_file(tmp_path, cli_env):
    result = run_cli("run", str(tmp_path / "missing.wav"), "--out", str(tmp_path / "runs"), env=cli_env)
    assert_one_line_error(result, 3, "no such file")
    assert not (tmp_path / "runs").exists()


def test_non_wav_call_file(tmp_path, cli_env):
    bogus = tmp_path / "call.wav"
    bogus.write_bytes(b"ID3\x04\x00 definitely not a wav file")
    result = run_cli("run", str(bogus), "--out", str(tmp_path / "runs"), env=cli_env)
    assert_one_line_error(result, 3, "not a readable audio file")


def test_llm_url_without_model_is_usage(tmp_path, cli_env):
    from tests.conftest import SAMPLES

    out = tmp_path / "runs"
    result = run_cli("run", str(SAMPLES / "claim_status.wav"), "--llm-url", "http://127.0.0.1:9", "--out", str(out), env=cli_env)
    assert_one_line_error(result, 2, "--model")
    assert not out.exists()


def test_unreachable_llm_url(tmp_path, cli_env):
    from tests.conftest import SAMPLES

    out = tmp_path / "runs"
    result = run_cli("run", str(SAMPLES / "claim_status.wav"), "--llm-url", "http://127.0.0.1:9", "--model", "m", "--out", str(out), env=cli_env)
    assert_one_line_error(result, 4, "not reachable")
    assert not out.exists()  # checked before the run folder is created


def test_report_on_missing_trace(tmp_path, cli_env):
    result = run_cli("report", str(tmp_path / "nope.jsonl"), env=cli_env)
    assert_one_line_error(result, 3, "no such file")
