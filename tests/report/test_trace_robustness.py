"""Issue 8, traces in: whatever is in a trace file, `report` reads what it can, says what it skipped
(count, file:line, reason) and never crashes. The reader is fuzzed with hypothesis."""

from __future__ import annotations

import io
import json
import os
import subprocess

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from voicetrace import semconv as sc
from voicetrace.report import build_report
from voicetrace.render import renderer
from voicetrace.traces.files import read_trace_files

from tests.conftest import VOICETRACE
from tests.report.synth import Turn, _attrs, call_spans, write_trace


def _request(spans: list[dict], service: str = "voicetrace") -> dict:
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": service})},
                               "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}


def _report_everything(paths):
    """Load, analyse and render every way; returns (tables, report, terminal text, JSON doc)."""
    tables = read_trace_files(paths)
    report = build_report(tables)
    term, doc = io.StringIO(), io.StringIO()
    renderer("terminal")(report, term)
    renderer("json")(report, doc)
    return tables, report, term.getvalue(), json.loads(doc.getvalue())


def _two_calls(tmp_path, name="trace.jsonl"):
    return write_trace(tmp_path / name, [call_spans([Turn(at=1500), Turn(at=9000)], call="a.wav"),
                                         call_spans([Turn(at=2000)], call="b.wav")])


def test_truncated_last_line_keeps_everything_before_it(tmp_path):
    path = _two_calls(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole + orjson.dumps(_request(call_spans([Turn(at=1500)], call="c.wav")))[:300])
    tables, report, term, doc = _report_everything([path])
    assert tables.skipped_lines == [(str(path), 3, "truncated last line")]
    assert sorted(report.turns["conversation"]) == ["a.wav", "a.wav", "b.wav"]
    assert "skipped 1 unreadable" in term and doc["skipped_lines"] == 1
    assert tables.skipped_note() == "skipped 1 unreadable line(s)/span(s): trace.jsonl:3 (truncated last line)"


def test_invalid_json_lines_are_skipped_by_line_number(tmp_path):
    path = tmp_path / "trace.jsonl"
    good = orjson.dumps(_request(call_spans([Turn(at=1500)], call="a.wav"))).decode()
    other = orjson.dumps(_request(call_spans([Turn(at=1500)], call="b.wav"))).decode()
    path.write_text("\n".join([good, "{not json", "[1, 2, 3]", '"a string"', other,
                               '{"resourceSpans": {"not": "a list"}}', "\x00\x01binary", ""]) + "\n")
    tables, report, _, _ = _report_everything([path])
    assert [(line, reason) for _, line, reason in tables.skipped_lines] == [
        (2, "invalid JSON"), (3, "not an OTLP export request"), (4, "not an OTLP export request"),
        (6, "not an OTLP export request"), (7, "invalid JSON")]
    assert sorted(report.turns["conversation"]) == ["a.wav", "b.wav"]


def test_foreign_otlp_with_unknown_attributes_and_span_kinds(tmp_path):
    spans = call_spans([Turn(at=1500)], call="ours.wav")
    for i, span in enumerate(spans):
        span["kind"] = [0, 1, 2, 3, 4, 5, 99, "SPAN_KIND_SERVER", None][i % 9]
        span["attributes"] += [
            {"key": "vendor.weird", "value": {"fancyValue": {"x": 1}}},
            {"key": "vendor.nested", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"arrayValue": {"values": [{"intValue": "7"}]}}}]}}},
            {"key": "vendor.empty", "value": {}},
            {"value": {"stringValue": "no key"}},
        ]
        span["droppedAttributesCount"] = 3
        span["links"] = [{"traceId": span["traceId"], "spanId": "00" * 8}]
        span["flags"] = 257
    foreign = [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "HTTP GET /v1/chat",
                "kind": "SPAN_KIND_CLIENT", "startTimeUnixNano": "1800000000000000000", "endTimeUnixNano": "1800000000100000000",
                "attributes": [{"key": "http.status_code", "value": {"intValue": 200}}],
                "status": {"code": "STATUS_CODE_ERROR", "message": "boom"}}]
    path = tmp_path / "foreign.jsonl"
    with open(path, "wb") as handle:
        handle.write(orjson.dumps(_request(spans, service="their-agent")) + b"\n")
        handle.write(orjson.dumps(_request(foreign, service="their-gateway")) + b"\n")
    tables, report, _, doc = _report_everything([path])
    assert tables.skipped == 0
    assert len(tables.spans) == len(spans) + 1
    assert len(report.turns) == 1 and report.turns["v2v_ms"].notna().all()
    assert any(o["name"] == "HTTP GET /v1/chat" for o in doc["other_spans"])
    attrs = tables.spans[tables.spans["name"] == sc.SPAN_TURN].iloc[0].attributes
    assert attrs["vendor.nested"] == {"k": [7]} and attrs["vendor.weird"] is None


def test_empty_file_and_blank_lines_say_no_turns(tmp_path):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n   \n")):
        path = tmp_path / name
        path.write_text(text)
        tables, report, term, doc = _report_everything([path])
        assert tables.skipped == 0 and report.turns.empty
        assert "no turns" in term and doc["turns"] == []


def test_spans_whose_parents_are_missing(tmp_path):
    spans = call_spans([Turn(at=1500), Turn(at=9000)], call="a.wav")
    conversation = spans[0]
    first_turn = next(s for s in spans if s["name"] == sc.SPAN_TURN)
    # The conversation span never arrived, and neither did the first turn span: its stages are orphans.
    kept = [s for s in spans if s is not conversation and s is not first_turn]
    path = write_trace(tmp_path / "orphans.jsonl", [kept])
    tables, report, _, doc = _report_everything([path])
    assert tables.skipped == 0 and len(tables.spans) == len(kept)
    assert len(report.turns) == 1  # the second turn, measured in full
    assert report.turns["v2v_ms"].notna().all()
    assert report.turns["conversation"].iloc[0] == first_turn["traceId"][:8]  # no call name without its span
    orphans = {o["name"] for o in doc["other_spans"]}
    assert {sc.SPAN_USER_SPEECH, sc.SPAN_LLM} <= orphans  # shown, not lost


def test_several_traces_mixed_in_one_file(tmp_path):
    a = call_spans([Turn(at=1500, ttft=100), Turn(at=9000, ttft=110)], call="a.wav")
    b = call_spans([Turn(at=1500, ttft=300)], call="b.wav")
    c = call_spans([Turn(at=4000, ttft=500)], call="c.wav")
    mixed = [s for pair in zip(a, b) for s in pair] + a[len(b):]
    path = tmp_path / "mixed.jsonl"
    with open(path, "wb") as handle:
        handle.write(orjson.dumps(_request(mixed[:7])) + b"\n")
        handle.write(orjson.dumps(_request(c[:4])) + b"\n")
        handle.write(orjson.dumps(_request(mixed[7:])) + b"\n")
        handle.write(orjson.dumps(_request(c[4:])) + b"\n")
    _, report, _, _ = _report_everything([path])
    by_call = report.turns.groupby("conversation")["ttft_ms"].apply(list).to_dict()
    assert by_call == {"a.wav": [pytest.approx(100), pytest.approx(110)], "b.wav": [pytest.approx(300)],
                       "c.wav": [pytest.approx(500)]}


def test_odd_values_lose_only_the_span_they_are_in(tmp_path):
    spans = call_spans([Turn(at=1500)], call="a.wav")
    odd = [
        dict(spans[1], spanId="aa" * 8, name="bad.start", startTimeUnixNano="soon"),
        dict(spans[1], spanId="ab" * 8, name="bad.end", endTimeUnixNano=str(2**70)),
        dict(spans[1], spanId="ac" * 8, name="negative", startTimeUnixNano="-5"),
        dict(spans[1], spanId="", name="no.id"),
        "not a span",
        dict(spans[1], spanId="ad" * 8, name="odd.attrs", attributes=[
            {"key": sc.ATTR_TURN_NUMBER, "value": {"intValue": "x"}},
            {"key": "deep", "value": json.loads('{"arrayValue": {"values": [' * 60 + "]}}" * 60)},
            {"key": "s", "value": {"stringValue": 5}}, "junk"]),
        dict(spans[1], spanId="ae" * 8, name=42),
        dict(spans[1], spanId="af" * 8, name="odd.events", events=[{"name": "e", "timeUnixNano": "x"}, 7]),
    ]
    path = write_trace(tmp_path / "odd.jsonl", [spans + odd])
    tables, report, _, _ = _report_everything([path])
    reasons = [reason for _, line, reason in tables.skipped_lines if line == 1]
    assert len(reasons) == 5 and all(r.startswith("span ") for r in reasons), reasons
    names = set(tables.spans["name"])
    assert {"odd.attrs", "odd.events", ""} <= names and not {"bad.start", "bad.end", "negative", "no.id"} & names
    assert len(report.turns) == 1 and report.turns["v2v_ms"].notna().all()  # the good spans are all there


def test_odd_whole_documents_are_salvaged_too(tmp_path):
    spans = call_spans([Turn(at=1500)], call="a.wav")
    spans.append(dict(spans[1], spanId="ba" * 8, startTimeUnixNano=str(2**70)))
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(_request(spans), indent=2))
    tables, report, _, _ = _report_everything([path])
    assert tables.skipped == 1 and len(report.turns) == 1
    jaeger = tmp_path / "jaeger.json"
    jaeger.write_text(json.dumps({"data": [{"traceID": "x", "spans": [{"startTime": "later"}]}, "junk"]}))
    tables, report, _, _ = _report_everything([jaeger])
    assert report.turns.empty


def test_report_cli_names_the_skipped_lines_and_exits_0(tmp_path, cli_env):
    path = _two_calls(tmp_path)
    with open(path, "ab") as handle:
        handle.write(b"{garbage\n{\"resourceSpans\": [")
    result = subprocess.run([str(VOICETRACE), "report", str(path)], capture_output=True, text=True, env=cli_env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "trace.jsonl:3 (invalid JSON); trace.jsonl:4 (truncated last line)" in result.stderr.replace("\n", " ")


# --- fuzzing ----------------------------------------------------------------------------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
                       st.floats(allow_nan=False), st.text(max_size=12))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                     max_leaves=20)
_kinds = st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue",
                          "bytesValue", "fooValue"])
_value = st.one_of(st.dictionaries(_kinds, _json, max_size=2), _json)
_attr = st.one_of(st.fixed_dictionaries({"key": st.one_of(st.sampled_from([
    sc.ATTR_TURN_NUMBER, sc.ATTR_ASR_TRANSCRIPT, sc.ATTR_LLM_OUTPUT, sc.ATTR_GENAI_OUTPUT_TOKENS, sc.ATTR_GENAI_INPUT_TOKENS,
    sc.ATTR_LANGUAGE, sc.ATTR_CALL_FILE, sc.ATTR_CONVERSATION_ID, sc.ATTR_TURN_INTERRUPTED, sc.ATTR_LLM_TPOT_MS,
    sc.ATTR_TOKEN_COUNT, "turn.user_bot_latency_seconds", "llama_cpp.prompt_n", "gen_ai.request.model"]), st.text(max_size=6)),
    "value": _value}), _json)
_time = st.one_of(st.integers(min_value=1_800_000_000_000_000_000, max_value=1_800_000_100_000_000_000).map(str),
                  st.integers(min_value=-(2**70), max_value=2**70), _json)
_span_name = st.one_of(st.sampled_from([sc.SPAN_CONVERSATION, sc.SPAN_TURN, sc.SPAN_USER_SPEECH, sc.SPAN_ENDPOINTING,
                                        sc.SPAN_ASR, sc.SPAN_LLM, sc.SPAN_TTS, sc.SPAN_BOT_SPEECH, "llm.server.prefill",
                                        "llm.server.request", "tool.x", "stt", "tts", "llm"]), _json)
_ids = st.sampled_from(["0af7651916cd43dd8448eb211c80319c", "5b8efff798038103d269b633813fc60c", "", "AAAA", "zz"])
_span_ids = st.sampled_from(["b7ad6b7169203331", "eee19b7ec3c1b174", "00f067aa0ba902b7", "", "b7ad6b71692033311"])
_span = st.fixed_dictionaries(
    {"traceId": _ids, "spanId": _span_ids, "name": _span_name, "startTimeUnixNano": _time, "endTimeUnixNano": _time},
    optional={"parentSpanId": _span_ids, "attributes": st.one_of(st.lists(_attr, max_size=5), _json),
              "events": st.lists(st.fixed_dictionaries({"name": st.one_of(st.sampled_from(
                  [sc.EVENT_FIRST_TOKEN, sc.EVENT_TOKEN, sc.EVENT_TTS_FIRST_AUDIO]), _json), "timeUnixNano": _time},
                  optional={"attributes": st.lists(_attr, max_size=2)}), max_size=3),
              "status": _json, "kind": _json})
_request_doc = st.fixed_dictionaries({"resourceSpans": st.one_of(st.lists(st.fixed_dictionaries(
    {"scopeSpans": st.lists(st.fixed_dictionaries({"spans": st.lists(st.one_of(_span, _json), max_size=6)}), max_size=2)},
    optional={"resource": st.fixed_dictionaries({"attributes": st.lists(_attr, max_size=2)})}), max_size=2), _json)})
_line = st.one_of(_request_doc.map(lambda d: orjson.dumps(d, option=orjson.OPT_PASSTHROUGH_DATACLASS)
                                   if _orjson_ok(d) else b"{}"),
                  st.binary(max_size=40), _json.map(lambda d: json.dumps(d).encode()))


def _orjson_ok(document) -> bool:
    try:
        orjson.dumps(document)
        return True
    except TypeError:  # integers beyond 64 bits: orjson can't write them, json can
        return False


# VOICETRACE_FUZZ_EXAMPLES=5000 for a longer hunt; CI runs 150 per test.
_FUZZ = settings(max_examples=int(os.environ.get("VOICETRACE_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])


def _span_entries(document) -> int | None:
    """Span entries in one decoded line, counted from the raw structure; None if it is no export request."""
    if not isinstance(document, dict):
        return None
    resources = document.get("resourceSpans", [])
    if not isinstance(resources, list):
        return None  # resourceSpans that is not a list (null included): named as no export request
    count = 0
    for resource in resources:
        scopes = resource.get("scopeSpans") if isinstance(resource, dict) else None
        for scope in scopes if isinstance(scopes, list) else []:
            spans = scope.get("spans") if isinstance(scope, dict) else None
            count += len(spans) if isinstance(spans, list) else 0
    return count


def _one_document(data: bytes):
    """The file as one JSON object when its first line is not one (how the loader tells a document from
    JSON lines); None otherwise. Documents of Jaeger's shapes are left to the other tests."""
    try:
        head = orjson.loads(data.split(b"\n", 1)[0])
        if isinstance(head, dict):
            assume(not ({"result", "data"} & set(head)))  # Jaeger's one-line answers: read as documents
            return None
    except orjson.JSONDecodeError:
        pass
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or "resourceSpans" not in document:
        assume(not isinstance(document, dict) or not ({"result", "data"} & set(document)))
        return None
    return document


def _line_entries(number: int, line: bytes, skipped: dict[int, list[str]], last: bool) -> int:
    """Check one line's skip reasons against its raw JSON; its span entries (0 if none or unreadable)."""
    if not line.strip():
        assert number not in skipped
        return 0
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        assert skipped.get(number) == ["truncated last line" if last else "invalid JSON"], (number, line)
        return 0
    count = _span_entries(document)
    if count is None:
        assert skipped.get(number) == ["not an OTLP export request"], (number, line)
        return 0
    assert all(reason.startswith("span ") for reason in skipped.get(number, [])), skipped[number]
    return count


@_FUZZ
@given(lines=st.lists(st.one_of(_line, _request_doc.map(lambda d: json.dumps(d).encode())), max_size=6),
       trailing_newline=st.booleans())
def test_fuzz_any_lines_never_crash_the_report(tmp_path_factory, lines, trailing_newline):
    """Every line is accounted for: unreadable lines are named with the right reason, and every span
    entry in a readable line is either in the tables or in the skipped list (none lost, none invented)."""
    path = tmp_path_factory.mktemp("fuzz") / "trace.jsonl"
    written = [line.replace(b"\n", b" ") for line in lines]
    path.write_bytes(b"\n".join(written) + (b"\n" if trailing_newline else b""))
    tables, report, term, doc = _report_everything([path])
    skipped: dict[int, list[str]] = {}
    for _, number, reason in tables.skipped_lines:
        skipped.setdefault(number, []).append(reason)
    whole = _one_document(path.read_bytes())
    if whole is not None:  # a file that is one JSON object is read as a document; its reasons are at line 1
        entries = _span_entries(whole)
        if entries is None:
            assert skipped == {1: ["not an OTLP export request"]}
            entries = 0
    else:
        entries = sum(_line_entries(number, line, skipped, last=number == len(written) and not trailing_newline)
                      for number, line in enumerate(written, start=1))
    span_skips = sum(reason.startswith("span ") for reasons in skipped.values() for reason in reasons)
    assert len(tables.spans) + span_skips == entries
    assert set(skipped) <= set(range(1, len(written) + 1))
    spans = tables.spans
    assert ((spans["start_ns"] >= 0) & (spans["end_ns"] >= 0)).all()
    assert all(isinstance(name, str) for name in spans["name"])
    assert doc["skipped_lines"] == tables.skipped and (f"skipped {tables.skipped} unreadable" in term) == bool(tables.skipped)
    assert len(doc["turns"]) <= (spans["name"] == sc.SPAN_TURN).sum()


@_FUZZ
@given(document=_request_doc)
def test_fuzz_a_readable_call_survives_a_hostile_neighbour(tmp_path_factory, document):
    path = write_trace(tmp_path_factory.mktemp("fuzz") / "trace.jsonl", [call_spans([Turn(at=1500)], call="ok.wav")])
    with open(path, "ab") as handle:
        handle.write(json.dumps(document).encode() + b"\n")
    tables, report, _, _ = _report_everything([path])
    ours = report.turns[report.turns["conversation"] == "ok.wav"]
    assert len(ours) == 1 and ours["v2v_ms"].notna().all()


@_FUZZ
@given(document=st.one_of(_request_doc, st.fixed_dictionaries({"data": _json}), st.fixed_dictionaries({"result": _json})))
def test_fuzz_whole_json_documents(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("fuzz") / "trace.json"
    path.write_text(json.dumps(document, indent=1))
    _report_everything([path])
