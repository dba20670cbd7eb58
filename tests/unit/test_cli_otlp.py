"""`--otlp` and `report --jaeger` mistakes: one line, non-zero exit, no traceback (the real CLI)."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import SAMPLES
from tests.unit.test_cli_errors import assert_one_line_error, run_cli


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("args, needle", [
    (["--otlp", "ftp://collector:4317"], "not an http(s):// or grpc:// URL"),
    (["--otlp", "http://localhost:4318", "--otlp-protocol", "http/json"], "grpc or http/protobuf"),
])
def test_bad_otlp_settings(tmp_path, cli_env, args, needle):
    result = run_cli("run", str(SAMPLES / "address_change.wav"), "--out", str(tmp_path / "runs"), *args, env=cli_env)
    assert_one_line_error(result, 2, needle)
    assert not (tmp_path / "runs").exists()


def test_bad_otlp_headers_from_the_environment(tmp_path, cli_env):
    env = dict(cli_env, OTEL_EXPORTER_OTLP_ENDPOINT="http://localhost:4318", OTEL_EXPORTER_OTLP_HEADERS="novalue")
    result = run_cli("run", str(SAMPLES / "address_change.wav"), "--out", str(tmp_path / "runs"), env=env)
    assert_one_line_error(result, 2, "not key=value")


def test_report_from_unreachable_jaeger(cli_env):
    result = run_cli("report", "--jaeger", f"http://127.0.0.1:{closed_port()}", "--service", "voicetrace", env=cli_env)
    assert_one_line_error(result, 4, "is not reachable")


# Usage mistakes exit 2 (issue 11: --since/--limit were 3), before any request to Jaeger (port 9: nothing there).
@pytest.mark.parametrize("args, code, needle", [
    ([], 2, "--jaeger"),
    (["--jaeger", "http://127.0.0.1:9", "--service", "x", "--since", "soon"], 2, "--since"),
    (["--jaeger", "http://127.0.0.1:9", "--service", "x", "--limit", "0"], 2, "--limit"),
    (["--jaeger", "http://127.0.0.1:9"], 2, "--service"),
    (["--jaeger", "http://127.0.0.1:9", "--trace-id", ""], 2, "--trace-id"),
    (["--jaeger", "http://127.0.0.1:9", "--service", "x", "--budget-ms", "0"], 2, "--budget-ms"),
])
def test_report_usage_errors(cli_env, args, code, needle):
    assert_one_line_error(run_cli("report", *args, env=cli_env), code, needle)


@pytest.mark.parametrize("args, env_extra, needle", [
    (["--prometheus-port", "70000"], {}, "--prometheus-port must be 0-65535"),
    ([], {"OTEL_METRICS_EXPORTER": "statsd"}, "OTEL_METRICS_EXPORTER: statsd not offered"),
    (["--prometheus-port", "9464", "--prometheus-linger-s", "-1"], {}, "--prometheus-linger-s must be 0 or more"),
])
def test_bad_metrics_settings(tmp_path, cli_env, args, env_extra, needle):
    result = run_cli("run", str(SAMPLES / "address_change.wav"), "--out", str(tmp_path / "runs"), *args,
                     env=dict(cli_env, **env_extra))
    assert_one_line_error(result, 2, needle)
    assert not (tmp_path / "runs").exists()
