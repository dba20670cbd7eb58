"""CallTrace, the one library wiring: resource on every span, one file per call, OTEL_* honoured,
personal pipeline settings only under content capture. No pipeline: the observer is driven by hand."""

from __future__ import annotations

import json

import pytest

from voicetrace import CallTrace
from voicetrace import semconv as sc
from voicetrace.clock import FakeClock
from voicetrace.otel.target import OtlpConfigError

CONFIG = {"vad_stop_secs": 0.2, "llm_model": "smollm2", "caller_phone": "+15550100", "system_prompt": "You are Sam"}


@pytest.fixture(autouse=True)
def no_otel_environment(monkeypatch):
    for name in ("OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
        monkeypatch.delenv(name, raising=False)


def one_call(path, **options) -> CallTrace:
    clock = FakeClock()
    with CallTrace(path, clock=clock, **options) as vt:
        vt.observer.start_conversation(0)
        clock.advance_ms(1500)
    return vt


def spans(path) -> list[tuple[str, dict, dict]]:
    """(name, resource attributes, span attributes) of every span in an OTLP JSON-lines file."""
    def flat(attributes):
        return {a["key"]: next(iter(a["value"].values())) for a in attributes}
    out = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out += [(s["name"], flat(rs["resource"]["attributes"]), flat(s.get("attributes", []))) for s in ss["spans"]]
    return out


def test_a_call_without_pipeline_gives_a_conversation_span_with_the_whole_resource(tmp_path):
    path = tmp_path / "trace.jsonl"
    vt = one_call(path, service_name="my-agent", conversation_id="call-7", environment="ci", pipeline_config=CONFIG,
                  conversation_attributes={sc.ATTR_CALL_FILE: "call.wav"})
    ((name, resource, attrs),) = spans(path)
    assert name == sc.SPAN_CONVERSATION and vt.spans_written == 1 and vt.export_stats is None
    assert attrs[sc.ATTR_CONVERSATION_ID] == "call-7" and attrs[sc.ATTR_CALL_FILE] == "call.wav"
    assert resource["service.name"] == "my-agent" and resource["deployment.environment"] == "ci"
    assert resource["conversation.id"] == "call-7"
    assert resource["voice.pipeline.config.vad_stop_secs"] == 0.2
    assert resource["voice.pipeline.config.llm_model"] == "smollm2"
    assert "voice.pipeline.config.system_prompt" not in resource


def test_conversation_id_defaults_to_a_fresh_one(tmp_path):
    first, second = one_call(tmp_path / "a.jsonl"), one_call(tmp_path / "b.jsonl")
    assert first.conversation_id and first.conversation_id != second.conversation_id
    ((_, resource, attrs),) = spans(tmp_path / "a.jsonl")
    assert resource["conversation.id"] == attrs["conversation.id"] == first.conversation_id


def test_a_second_call_on_the_same_path_replaces_the_file_unless_appending(tmp_path):
    path = tmp_path / "trace.jsonl"
    one_call(path, conversation_id="first")
    one_call(path, conversation_id="second")
    assert [r["conversation.id"] for _, r, _ in spans(path)] == ["second"]
    one_call(path, conversation_id="third", append=True)
    assert [r["conversation.id"] for _, r, _ in spans(path)] == ["second", "third"]


def test_standard_resource_variables_are_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_SERVICE_NAME", "agent-from-env")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,team=voice")
    one_call(tmp_path / "t.jsonl")
    ((_, resource, _),) = spans(tmp_path / "t.jsonl")
    assert (resource["service.name"], resource["deployment.environment"], resource["team"]) == ("agent-from-env", "staging", "voice")
    one_call(tmp_path / "t.jsonl", service_name="explicit", environment="prod")
    ((_, resource, _),) = spans(tmp_path / "t.jsonl")
    assert (resource["service.name"], resource["deployment.environment"]) == ("explicit", "prod")


@pytest.mark.parametrize("options, phone", [
    ({}, None),
    ({"redact": True}, None),
    ({"capture_content": True}, "+15550100"),
    ({"capture_content": True, "redact": True}, "+########"),
])
def test_the_callers_phone_leaves_only_under_content_capture_and_then_redacted(tmp_path, options, phone):
    path = tmp_path / "t.jsonl"
    one_call(path, pipeline_config=CONFIG, **options)
    ((_, resource, _),) = spans(path)
    assert resource.get("voice.pipeline.config.caller_phone") == phone
    if phone != "+15550100":
        assert "15550100" not in path.read_text()  # nowhere in the file, under no key


def test_content_capture_from_the_standard_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    vt = one_call(tmp_path / "t.jsonl", pipeline_config=CONFIG)
    assert vt.observer.content.capture
    ((_, resource, _),) = spans(tmp_path / "t.jsonl")
    assert resource["voice.pipeline.config.caller_phone"] == "+15550100"


def test_live_export_follows_the_otlp_variables_and_bad_ones_fail_before_any_file(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    assert CallTrace(path).otlp is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert CallTrace(path).otlp.endpoint == "http://collector:4318/v1/traces"
    assert CallTrace(path, otlp=False).otlp is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "novalue")
    with pytest.raises(OtlpConfigError):
        CallTrace(path)
    assert not path.exists()


def test_instrument_llm_needs_an_open_trace(tmp_path):
    with pytest.raises(RuntimeError, match="open the trace first"):
        CallTrace(tmp_path / "t.jsonl").instrument_llm(object())


def test_instrument_llm_times_a_real_service_for_the_observer_and_undoes_it_on_close(tmp_path):
    from pipecat.services.openai.llm import OpenAILLMService

    service = OpenAILLMService(api_key="x", base_url="http://127.0.0.1:9/v1", settings=OpenAILLMService.Settings(model="m"))
    hooks = service._client._client.event_hooks["request"]
    original = service.get_chat_completions
    with CallTrace(tmp_path / "t.jsonl", otlp=False) as vt:
        instrumentor = vt.instrument_llm(service, stall_timeout_s=5.0)
        assert instrumentor.is_instrumented and len(hooks) == 1 and service.get_chat_completions != original
        assert instrumentor._sink is vt.observer and instrumentor._clock is vt.clock
    # closing the trace hands the service back as it was: no hook stamping into a closed trace
    assert not instrumentor.is_instrumented and hooks == [] and service.get_chat_completions == original
