"""One decoder per format, the same salvage rule everywhere: every span that can be read is kept, every
one that can't is named (source, line, reason): trace files, Jaeger's UI JSON and Jaeger's API alike."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import orjson
import pytest

from voicetrace.traces.files import read_trace_files
from voicetrace.traces.jaeger import API_V3, read_jaeger

from tests.report.jaeger_legacy import to_jaeger
from tests.report.synth import Turn, call_spans

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("indent", [2, None])  # the UI's download; one line, as curl of /api/traces/ID gives it
def test_jaeger_ui_json_loses_only_the_span_it_cannot_read(tmp_path, indent):
    spans = call_spans([Turn(at=1500)], call="a.wav")
    document = to_jaeger(spans)
    trace = document["data"][0]
    trace["spans"][1]["startTime"] = "later"
    trace["spans"][2]["tags"].append({"key": "n", "type": "int64", "value": "not a number"})
    document["data"].append("junk")
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(document, indent=indent))
    tables = read_trace_files([path])
    assert tables.skipped_lines == [(str(path), 1, "trace 1 span 2: bad startTime"),
                                    (str(path), 1, "trace 2: not a Jaeger trace")]
    assert len(tables.spans) == len(spans) - 1
    assert tables.spans.set_index("span_id").loc[spans[2]["spanId"], "attributes"]["n"] is None


def test_jaeger_api_answers_are_salvaged_like_files():
    spans = call_spans([Turn(at=1500)], call="a.wav")
    spans[3] = dict(spans[3], startTimeUnixNano="soon")
    request = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "x"}}]},
                                  "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    body = orjson.dumps({"result": request})

    def answer(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body) if req.url.path.startswith("/api/v3/traces/") else httpx.Response(404)

    tables = read_jaeger("http://jaeger.test:16686", trace_ids=[spans[0]["traceId"]], api=API_V3,
                         transport=httpx.MockTransport(answer))
    assert tables.skipped_lines == [("jaeger:http://jaeger.test:16686", 1, "span 4: bad startTimeUnixNano")]
    assert len(tables.spans) == len(spans) - 1


def test_the_legacy_shape_is_jaegers():
    """The unit tests' legacy writer produces the keys and value types a real Jaeger answers with."""
    import orjson

    from tests.report.jaeger_legacy import to_jaeger

    real = orjson.loads((DATA / "jaeger_trace.json").read_bytes())
    spans = [s for line in (DATA / "jaeger_source.jsonl").read_bytes().splitlines() if line.strip()
             for r in orjson.loads(line)["resourceSpans"] for sc_ in r["scopeSpans"] for s in sc_["spans"]]
    ours = to_jaeger(spans)
    assert ours.keys() == real.keys() and ours["data"][0].keys() == real["data"][0].keys()
    real_span, our_span = real["data"][0]["spans"][0], ours["data"][0]["spans"][0]
    assert our_span.keys() == real_span.keys()
    assert {type(v) for s in ours["data"][0]["spans"] for v in (s["startTime"], s["duration"])} == {int}
    kinds = {t["type"] for s in real["data"][0]["spans"] for t in s["tags"]}
    assert {t["type"] for s in ours["data"][0]["spans"] for t in s["tags"]} <= kinds | {"bool"}
