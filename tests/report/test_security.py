"""Issue 8, security: every text from a trace is escaped in the HTML; --redact reaches every text
attribute, event attribute and error message; servers voicetrace starts listen on loopback only;
nothing in a trace file makes `report` read or write outside the paths it was given."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import orjson
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from voicetrace import semconv as sc
from voicetrace.report import build_report
from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.llm_stream import LLMCall
from voicetrace.capture.span_builder import SpanBuilder
from voicetrace.capture.turn_record import ToolRun, TurnRecord
from voicetrace.render.html import build_page
from voicetrace.servers.faulty_llm import FaultyLLMServer
from voicetrace.servers.llama import LlamaServer
from voicetrace.traces.files import read_trace_files

from tests.conftest import ROOT, VOICETRACE
from tests.report.conftest import XSS
from tests.report.synth import Turn, _attrs, call_spans

MS = 1_000_000
SECRET = "call me on 5550123 or jo.lee@example.com"


# --- HTML: every text that came from a trace is escaped -----------------------------------

def test_every_text_field_of_a_trace_is_escaped_in_the_html(tmp_path):
    spans = call_spans([Turn(at=1500, transcript=XSS, language=XSS, tool=20), Turn(at=9000, transcript=XSS)],
                       call=XSS)
    for span in spans:
        span["attributes"] += _attrs({XSS: XSS, sc.ATTR_LLM_OUTPUT: XSS, sc.ATTR_CONVERSATION_ID: XSS,
                                      sc.ATTR_GENAI_REQUEST_MODEL: XSS})
        for event in span["events"]:
            event["attributes"] += _attrs({XSS: XSS})
        span["status"] = {"code": 2, "message": XSS}
    spans.append(dict(spans[-1], spanId="f" * 16, name=XSS))  # a span outside the model, named XSS
    request = {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": XSS})},
                                  "scopeSpans": [{"scope": {"name": XSS}, "spans": spans}]}]}
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(orjson.dumps(request) + b"\n" + b"{broken " + XSS.encode() + b"\n")
    tables = read_trace_files([path])
    page = build_page(build_report(tables, sources=[str(path)]))
    assert "<img src=x" not in page and '<script>window' not in page
    # Only voicetrace's own script elements: plotly, the data island, the page script.
    assert len(re.findall(r"<script[ >]", page)) == 3 and page.count("</script>") == 3
    hits = [m.start() for m in re.finditer("img src=x", page)]
    assert hits  # the payload is there, as text
    assert all(page[:h].endswith(("&lt;", "\\u003c", "\\u0026lt;")) for h in hits)  # never as markup


# --- redaction: every text attribute, event attribute and error message ---------------------

def _string_values(span) -> list[str]:
    values = [v for v in span.attributes.values() if isinstance(v, str)]
    values += [x for v in span.attributes.values() if isinstance(v, (list, tuple)) for x in v if isinstance(x, str)]
    for event in span.events:
        values += [v for v in event.attributes.values() if isinstance(v, str)]
    if span.status.description:
        values.append(span.status.description)
    return values


def test_redact_reaches_every_text_attribute_event_and_error():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    builder = SpanBuilder(tracer, lambda ns: ns, ContentPolicy(capture=True, redact=True))
    rec = TurnRecord(number=1, speech_start_ns=0, speech_end_ns=1000 * MS, decided_ns=1200 * MS,
                     committed_ns=1200 * MS, asr_start_ns=0, asr_end_ns=1300 * MS, transcript=SECRET,
                     interim_ns=[(500 * MS, SECRET)], llm_end_ns=1800 * MS, tts_start_ns=1700 * MS,
                     bot_start_ns=2000 * MS, bot_end_ns=2500 * MS)
    rec.span = builder.start_turn_span(rec, None)
    call = LLMCall(request_ns=1400 * MS, text=SECRET, token_times_ns=[1500 * MS], token_counts=[1], end_ns=1800 * MS,
                   error=None)
    rec.llm_calls.append(call)
    rec.tools.append(ToolRun("get_claim_status", 1350 * MS, 1360 * MS, arguments=json.dumps({"q": SECRET}),
                             error="RuntimeError"))
    rec.errors["tts"] = (1750 * MS, "RuntimeError", f"could not say: {SECRET}")
    builder.emit_turn(rec)
    texts = [v for span in exporter.get_finished_spans() for v in _string_values(span)]
    assert any("<email>" in v for v in texts) and any("#######" in v for v in texts)
    leaks = [v for v in texts if "5550123" in v or "jo.lee@example.com" in v]
    assert leaks == []
    names = {span.name for span in exporter.get_finished_spans()}
    assert {sc.SPAN_ASR, sc.SPAN_LLM, sc.SPAN_TTS, "tool.get_claim_status"} <= names


def test_content_capture_is_off_by_default(monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    policy = ContentPolicy.from_flags(None, False)
    assert policy.capture is False and policy.text(SECRET) is None


# --- servers listen on loopback only ------------------------------------------------------

def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
            address = sock.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_scripted_llm_server_listens_on_loopback_only():
    with FaultyLLMServer() as server:
        assert server.host == "127.0.0.1"
        with socket.create_connection(("127.0.0.1", server.port), timeout=2):
            pass
        other = _non_loopback_address()
        if other is not None:
            with socket.socket() as sock:
                sock.settimeout(2)
                assert sock.connect_ex((other, server.port)) != 0


def test_llama_server_is_started_on_loopback_only(tmp_path):
    server = LlamaServer(binary=Path("llama-server"), model=Path("m.gguf"), log_path=tmp_path / "log")
    command = server.command()
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert server.base_url.startswith("http://127.0.0.1:")
    # The real process's listening socket is checked in tests/integration/test_run_faults.py.


def test_jaeger_config_listens_on_loopback_only():
    config = (ROOT / "dashboards" / "jaeger.yaml").read_text()
    endpoints = re.findall(r"endpoint:\s*\"?([^\"\n]+)", config)
    assert len(endpoints) == 5
    assert all(e.startswith("${env:JAEGER_LISTEN_HOST:-127.0.0.1}:") for e in endpoints), endpoints
    harness = (ROOT / "tests" / "integration" / "jaeger_server.py").read_text()
    assert "0.0.0.0" not in harness


# --- report reads and writes only the paths it was given ----------------------------------

def test_paths_inside_a_trace_never_make_report_read_or_write_elsewhere(tmp_path, cli_env):
    work = tmp_path / "work"
    run = work / "run"
    run.mkdir(parents=True)
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    victim = tmp_path / "victim.gguf"  # a readable GGUF outside the cache's models folder
    victim.write_bytes(b"GGUF" + bytes(64))
    evil = ["../victim", str(victim), "../../victim.gguf", str(tmp_path / "written.html"), "../" * 8 + "etc/passwd"]
    spans = call_spans([Turn(at=1500)], call=evil[3])
    for span in spans:
        span["attributes"] += _attrs({sc.ATTR_GENAI_REQUEST_MODEL: evil[0], sc.ATTR_CALL_FILE: evil[3],
                                      "voice.call.path": evil[4], "file": evil[1]})
    (run / "trace.jsonl").write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + b"\n")
    (run / "run.json").write_text(json.dumps({"pipeline": {"llm_model": evil[2]}}))
    before = sorted(p for p in tmp_path.rglob("*"))
    result = subprocess.run([str(VOICETRACE), "report", str(run), "-o", str(work / "out" / "report.html"), "--json"],
                            capture_output=True, text=True, timeout=120, cwd=work,
                            env=dict(cli_env, VOICETRACE_CACHE=str(cache)))
    assert result.returncode == 0, result.stderr
    after = sorted(p for p in tmp_path.rglob("*"))
    assert set(after) - set(before) == {work / "out", work / "out" / "report.html"}
    assert json.loads(result.stdout)["model_shape"] is None  # the GGUF outside the cache was not read
