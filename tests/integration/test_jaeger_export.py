"""Live export to a real Jaeger and reports read back from it.

One real `voicetrace run --otlp` (gRPC) feeds most assertions; a second run over HTTP (configured
through the standard OTEL_EXPORTER_OTLP_* variables) has its Jaeger stopped half-way.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time

import httpx
import pandas as pd
import pytest

from voicetrace import __version__
from voicetrace import semconv as sc
from voicetrace.analysis.turns import turn_metrics
from voicetrace.traces.jaeger import API_LEGACY, read_jaeger
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE, wait_for
from tests.integration.jaeger_server import Jaeger

pytestmark = pytest.mark.integration

CALL = "address_change"
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory):
    server = Jaeger(tmp_path_factory.mktemp("jaeger") / "jaeger.log").start()
    yield server
    server.stop()


def spans_named(payload: dict, name: str) -> list[dict]:
    return [s for rs in (payload.get("result") or {}).get("resourceSpans", [])
            for ss in rs.get("scopeSpans", []) for s in ss.get("spans", []) if s.get("name") == name]


def start_run(out, run_id, service, extra_args=(), env=None):
    stdout, stderr = open(out / f"{run_id}.out", "w"), open(out / f"{run_id}.err", "w")
    proc = subprocess.Popen(
        [str(VOICETRACE), "run", str(SAMPLES / f"{CALL}.wav"), "--out", str(out), "--run-id", run_id,
         "--capture-content", "--service-name", service, *extra_args],
        stdout=stdout, stderr=stderr, text=True, env=dict(env or os.environ, COLUMNS="140"),
    )
    stdout.close()
    stderr.close()
    return proc


def first_turn_while_running(proc, jaeger, service) -> dict:
    """Poll Jaeger until a turn span of ``service`` is there; note whether the run was still going."""
    def seen():
        payload = jaeger.find_v3(service)
        turns = spans_named(payload, sc.SPAN_TURN)
        if turns:
            return {"running": proc.poll() is None, "turns": turns,
                    "conversations": spans_named(payload, sc.SPAN_CONVERSATION), "at": time.monotonic()}
        if proc.poll() is not None:
            return {"running": False, "turns": [], "conversations": [], "at": time.monotonic()}
        return None
    return wait_for(seen, 180, "the first turn's spans in Jaeger", interval_s=0.2)


def finish(proc, out, run_id):
    proc.wait(timeout=RUN_TIMEOUT_S)
    return proc.returncode, (out / f"{run_id}.out").read_text(), (out / f"{run_id}.err").read_text()


@pytest.fixture(scope="module")
def grpc_run(jaeger, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    service = f"vt-grpc-{secrets.token_hex(3)}"
    started = time.monotonic()
    proc = start_run(out, "live", service, ["--otlp", jaeger.otlp_grpc, "--otlp-protocol", "grpc", "--environment", "ci"])
    try:
        first = first_turn_while_running(proc, jaeger, service)
        code, stdout, stderr = finish(proc, out, "live")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, stderr[-3000:]
    run_dir = out / "live"
    tables = read_trace_files([run_dir / "trace.jsonl"])
    trace_id = tables.spans.query("name == 'conversation'").trace_id.iloc[0]
    # The run has ended, so every span has been handed over; Jaeger stores within its batch timeout.
    wait_for(lambda: len(spans_named(jaeger.find_v3(service), sc.SPAN_CONVERSATION)) == 1, 30, "the conversation span")
    return {"service": service, "dir": run_dir, "stdout": stdout, "stderr": stderr, "first": first,
            "tables": tables, "trace_id": trace_id, "wall_s": time.monotonic() - started}


def test_first_turn_is_in_jaeger_while_the_call_is_still_playing(grpc_run):
    first = grpc_run["first"]
    assert first["running"], "the run had ended before any turn reached Jaeger"
    assert first["conversations"] == [], "conversation span already there: the call was over"
    assert {a["key"]: a["value"] for a in first["turns"][0]["attributes"]}[sc.ATTR_TURN_NUMBER] == {"intValue": "1"}


def test_trace_in_jaeger_has_every_span_with_its_parent(grpc_run, jaeger):
    payload = httpx.get(f"{jaeger.query_url}/api/v3/traces/{grpc_run['trace_id']}", params={"raw_traces": "true"}, timeout=10).json()
    spans = [s for rs in payload["result"]["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    in_jaeger = {s["spanId"]: (s["name"], s.get("parentSpanId", "")) for s in spans}
    local = grpc_run["tables"].spans
    assert in_jaeger == {r.span_id: (r.name, r.parent_span_id) for r in local.itertuples()}

    by_id = {s["spanId"]: s for s in spans}
    (conversation,) = [s for s in spans if s["name"] == sc.SPAN_CONVERSATION]
    assert not conversation.get("parentSpanId")
    turns = [s for s in spans if s["name"] == sc.SPAN_TURN]
    assert len(turns) >= 3 and all(t["parentSpanId"] == conversation["spanId"] for t in turns)
    for stage in sc.STAGE_SPANS:
        stage_spans = [s for s in spans if s["name"] == stage]
        assert len(stage_spans) >= len(turns), stage
        assert all(by_id[s["parentSpanId"]]["name"] == sc.SPAN_TURN for s in stage_spans), stage


def test_resource_attributes_in_jaeger(grpc_run, jaeger):
    payload = httpx.get(f"{jaeger.query_url}/api/v3/traces/{grpc_run['trace_id']}", timeout=10).json()
    resources = [{a["key"]: next(iter(a["value"].values())) for a in rs["resource"]["attributes"]}
                 for rs in payload["result"]["resourceSpans"]]
    pipeline = json.loads((grpc_run["dir"] / "run.json").read_text())["pipeline"]
    for attrs in resources:
        assert attrs["service.name"] == grpc_run["service"]
        assert attrs["service.version"] == __version__
        assert attrs["deployment.environment"] == "ci"
        assert attrs["host.name"]
        assert attrs["conversation.id"] == "live"
        assert attrs["voice.call.file"] == f"{CALL}.wav"
        assert float(attrs["voice.pipeline.config.vad_stop_secs"]) > 0
        # The whole pipeline configuration (run.json's scalars) is on the resource.
        for key, value in pipeline.items():
            if key != "system_prompt" and isinstance(value, (str, int, float, bool)) and value != "":
                got = attrs[f"voice.pipeline.config.{key}"]
                assert (float(got) == value) if isinstance(value, float) else (str(got).lower() == str(value).lower()), key


@pytest.mark.parametrize("tag, value, hits", [
    ("conversation.id", "live", 1), ("voice.call.file", f"{CALL}.wav", 1), ("conversation.id", "other", 0),
])
def test_conversation_and_call_file_are_searchable_tags(grpc_run, jaeger, tag, value, hits):
    response = httpx.get(f"{jaeger.query_url}/api/traces", timeout=10, params={
        "service": grpc_run["service"], "tags": json.dumps({tag: value}), "lookback": "1h", "limit": 20})
    assert response.status_code == 200
    assert len(response.json()["data"] or []) == hits


def metrics_from_file(run):
    return turn_metrics(run["tables"])


def test_same_metrics_from_file_and_from_jaeger(grpc_run, jaeger):
    from_file = metrics_from_file(grpc_run)
    from_jaeger = turn_metrics(read_jaeger(jaeger.query_url, grpc_run["service"], since_s=3600))
    assert len(from_file) >= 3
    # Jaeger hands back nanosecond times, but a stored time can come back 1 ns off (seen once in
    # CI); anything within a microsecond is the same moment for every metric we report.
    ns = [c for c in from_file.columns if c.endswith("_ns")]
    assert ((from_file[ns] - from_jaeger[ns]).abs().max().fillna(0) <= 1_000).all()
    pd.testing.assert_frame_equal(from_file.drop(columns=ns), from_jaeger.drop(columns=ns),
                                  check_exact=False, rtol=0, atol=1e-3)


def test_legacy_api_gives_the_same_metrics_to_the_microsecond(grpc_run, jaeger):
    from_file = metrics_from_file(grpc_run)
    legacy = turn_metrics(read_jaeger(jaeger.query_url, grpc_run["service"], since_s=3600, api=API_LEGACY))
    assert list(legacy["turn"]) == list(from_file["turn"])
    assert list(legacy["transcript"]) == list(from_file["transcript"])
    for column in ("endpointing_ms", "asr_final_ms", "ttft_ms", "first_sentence_ms", "tts_ttfb_ms", "v2v_ms", "turn_e2e_ms"):
        assert (legacy[column] - from_file[column]).abs().max() <= 0.002, column  # µs-rounded times


def report_cli(*args):
    return subprocess.run([str(VOICETRACE), "report", *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, COLUMNS="140"))


def trace_alone(run, tmp_path) -> str:
    """The run folder without its call.wav: Jaeger holds spans, not audio, so the file report to
    compare with is the one without the acoustic check (run.json stays: it names the model)."""
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("trace.jsonl", "run.json"):
        shutil.copyfile(run["dir"] / name, folder / name)
    return str(folder)


def test_report_command_from_jaeger_prints_the_same_report_as_from_the_file(grpc_run, jaeger, tmp_path):
    from_file = report_cli(trace_alone(grpc_run, tmp_path))
    from_jaeger = report_cli("--jaeger", jaeger.query_url, "--service", grpc_run["service"], "--since", "1h")
    by_id = report_cli("--jaeger", jaeger.query_url, "--trace-id", grpc_run["trace_id"])
    assert from_file.returncode == from_jaeger.returncode == by_id.returncode == 0, from_jaeger.stderr
    assert "V2V" in from_file.stdout and f"{CALL}.wav" in from_file.stdout
    assert from_jaeger.stdout == from_file.stdout
    assert by_id.stdout == from_file.stdout


def test_json_report_from_jaeger_equals_the_one_from_the_file(grpc_run, jaeger, tmp_path):
    trace = trace_alone(grpc_run, tmp_path)
    from_file = json.loads(report_cli(trace, "--json").stdout)
    from_jaeger = json.loads(report_cli("--jaeger", jaeger.query_url, "--service", grpc_run["service"], "--json").stdout)
    assert from_file.pop("sources") == [trace]
    assert from_jaeger.pop("sources") == [jaeger.query_url]
    assert from_jaeger == from_file


def test_report_errors_from_jaeger_are_one_line(grpc_run, jaeger):
    for args, needle in (
        (["--service", "no-such-service"], "has no traces"),
        (["--trace-id", "0123456789abcdef0123456789abcdef"], "not found"),
        (["--service", grpc_run["service"], "--since", "1s"], None),
    ):
        result = report_cli("--jaeger", jaeger.query_url, *args)
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        assert "Traceback" not in result.stderr
        if needle:
            assert result.returncode == 3 and len(lines) == 1 and needle in lines[0], result.stderr


def test_run_summary_reports_delivery(grpc_run):
    spans = len(grpc_run["tables"].spans)
    assert f"otlp: {spans} spans sent to" in grpc_run["stdout"]
    assert not [l for l in grpc_run["stderr"].splitlines() if l.startswith("warning:")], grpc_run["stderr"]


def test_paging_and_limit_return_the_newest_traces(jaeger):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from voicetrace.otel.live import attach_live_export
    from voicetrace.otel.target import resolve_otlp_target

    service = f"vt-paging-{secrets.token_hex(3)}"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    processor = attach_live_export(provider, resolve_otlp_target(jaeger.otlp_grpc, "grpc", {}))
    tracer = provider.get_tracer("paging")
    trace_ids = []
    for number in range(7):
        with tracer.start_as_current_span(sc.SPAN_CONVERSATION) as conv:
            with tracer.start_as_current_span(sc.SPAN_TURN, attributes={sc.ATTR_TURN_NUMBER: number}):
                pass
        trace_ids.append(format(conv.get_span_context().trace_id, "032x"))
        assert processor.force_flush(5000)
        # Jaeger orders by arrival: let each trace land before the next one starts.
        wait_for(lambda: len(spans_named(jaeger.find_v3(service, num_traces=50), sc.SPAN_TURN)) == number + 1, 20, "trace stored")
    provider.shutdown()
    assert processor.stats.spans_undelivered == 0

    for api in (None, API_LEGACY):
        newest5 = read_jaeger(jaeger.query_url, service, since_s=600, limit=5, page_traces=2, api=api)
        assert sorted(newest5.spans.trace_id.unique()) == sorted(trace_ids[-5:]), api
        everything = read_jaeger(jaeger.query_url, service, since_s=600, limit=100, page_traces=3, api=api)
        assert sorted(everything.spans.trace_id.unique()) == sorted(trace_ids), api
        assert len(everything.spans) == 14


def test_jaeger_stopped_mid_run_over_http(tmp_path):
    jaeger = Jaeger(tmp_path / "jaeger.log").start()
    service = f"vt-http-{secrets.token_hex(3)}"
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=jaeger.otlp_http, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf")
    proc = start_run(tmp_path, "down", service, env=env)
    try:
        first = first_turn_while_running(proc, jaeger, service)
        assert first["running"], "the run had ended before any turn reached Jaeger over HTTP"
        jaeger.stop()
        code, stdout, stderr = finish(proc, tmp_path, "down")
    finally:
        if proc.poll() is None:
            proc.kill()
        jaeger.stop()
    assert code == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    warnings = [l for l in stderr.splitlines() if "unreachable or too slow" in l]
    assert len(warnings) == 1, stderr
    summary = [l for l in stderr.splitlines() if "spans not delivered to" in l]
    assert len(summary) == 1, stderr

    tables = read_trace_files([tmp_path / "down" / "trace.jsonl"])
    script = json.loads((SAMPLES / f"{CALL}.json").read_text())
    assert tables.skipped == 0
    assert (tables.spans.name == sc.SPAN_CONVERSATION).sum() == 1
    assert (tables.spans.name == sc.SPAN_TURN).sum() == len(script["lines"])
    info = json.loads((tmp_path / "down" / "run.json").read_text())
    assert info["status"] == "complete"
    counts = re.search(r"(\d+) spans not delivered to .*\((\d+) sent\)", summary[0])
    undelivered, sent = int(counts.group(1)), int(counts.group(2))
    assert undelivered > 0 and sent > 0
    assert undelivered + sent == len(tables.spans)
    assert info["otlp"] == {"endpoint": f"{jaeger.otlp_http}/v1/traces", "protocol": "http/protobuf",
                            "spans_sent": sent, "spans_undelivered": undelivered}
