"""The metric registry agrees with everything that reads it: the breakdown's segments, the columns
the renderers show, the metrics budgets and whatif accept, the README; TTFT and TPOT come from events."""

from __future__ import annotations

import io
import re
from pathlib import Path

import orjson
import pytest

from voicetrace import semconv as sc
from voicetrace.analysis import metrics as reg
from voicetrace.analysis.breakdown import breakdown
from voicetrace.analysis.budgets import BudgetError, parse
from voicetrace.analysis.diff import diff
from voicetrace.analysis.metrics import METRICS, SEGMENTS
from voicetrace.report import build_report
from voicetrace.analysis.turns import TURN_COLUMNS, turn_metrics
from voicetrace.analysis.whatif import whatif
from voicetrace.render import renderer
from voicetrace.traces.files import read_trace_files as load

from tests.report.synth import Turn, call_spans, write_trace

README = Path(__file__).resolve().parents[2] / "README.md"
IDENTITY = {"conversation", "trace_id", "turn", "at_s", "interrupted", "language", "transcript", "llm_output"}


@pytest.fixture
def report(tmp_path):
    turns = [Turn(at=1000, queue=5, prefill=40, tool=30, input_tokens=100, language="en"),
             Turn(at=9000, language="hi"), Turn(at=17000, missing={sc.SPAN_TTS})]
    return build_report(load([write_trace(tmp_path / "t.jsonl", [call_spans(turns)])]))


def test_every_breakdown_segment_is_a_registered_metric(report):
    parts = breakdown(report.turns, report.tables)
    produced = {c.removesuffix("_ms") for c in parts if c.endswith("_ms") and c != "v2v_ms"}
    assert produced == set(SEGMENTS)
    assert all(METRICS[s].segment for s in SEGMENTS)
    assert {c for c in report.turns if c.startswith("bd_")} == {METRICS[s].segment_column for s in SEGMENTS}


def test_the_chain_runs_from_speech_end_to_bot_audio_over_turn_table_milestones():
    v2v = METRICS["v2v"].between
    milestones = [m for _, m in reg.CHAIN]
    # V2V ends where the bot is audible: the chain's last milestone, or (traces without it) the first frame played.
    assert v2v[1] == "bot_onset_ns" and milestones[-2:] == ["bot_start_ns", "bot_audible_ns"]
    assert reg.CHAIN[0][0] == SEGMENTS[0]
    assert set(milestones) <= set(TURN_COLUMNS)
    assert reg.CHAIN == ((("endpointing", "endpoint_end_ns"), ("asr_final", "asr_end_ns"), (None, "llm_start_ns"),
                          ("llm_ttft", "first_token_ns"), ("first_sentence", "tts_start_ns"),
                          ("tts_ttfb", "first_audio_ns"), ("transport", "bot_start_ns"),
                          ("tts_leading_silence", "bot_audible_ns")))
    for m in reg.REGISTRY:
        assert m.between is None or set(m.between) <= set(TURN_COLUMNS), m.key
        assert set(m.parts) <= set(SEGMENTS), m.key


def test_every_registered_metric_is_computed(report):
    from voicetrace.acoustic.check import CHECK_COLUMNS

    for m in reg.REGISTRY:
        if m.computed_by == "acoustic":
            assert m.column in CHECK_COLUMNS, m.key
        elif m.over == "gaps":
            assert m.column in report.gaps, m.key
        else:
            assert m.column in report.turns, m.key
    computed = {c for c in turn_metrics(report.tables) if c.endswith("_ms") and c not in ("reported_user_bot_ms",)}
    assert computed == {m.column for m in reg.REGISTRY if m.computed_by == "turns" and m.between}


def test_units_are_in_the_column_names():
    for m in reg.REGISTRY:
        assert m.column.endswith({"ms": "_ms", "tokens": "tokens", "bytes": "_bytes"}[m.unit]), m.key
        assert m.computed_by in ("turns", "tokens", "breakdown", "kvcache", "acoustic", "integration", "wire"), m.key


def test_the_terminal_shows_registered_columns_only(report):
    out = io.StringIO()
    renderer("terminal")(report, out)
    lines = out.getvalue().splitlines()
    header = next(line for line in lines if "transcript start" in line)
    cells = [c.strip() for c in re.split(r"[┃│]", header) if c.strip()]
    assert cells[:3] == ["turn", "at s", "transcript start"]
    assert cells[3:] == [METRICS[k].header for k in reg.TURN_TABLE]
    headline = [line.split("│")[1].strip() for line in lines if line.startswith("│") and "│" in line[1:]]
    assert [METRICS[k].header for k in reg.HEADLINE] == headline[-len(reg.HEADLINE):]
    mean = next(line for line in lines if line.startswith("mean V2V breakdown"))
    assert all(METRICS[s].label in mean for s in ("endpointing", "asr_final", "llm_prefill", "tools"))


def test_json_fields_are_registered_and_complete(report):
    out = io.StringIO()
    renderer("json")(report, out)
    doc = orjson.loads(out.getvalue())
    registered = {m.column for m in reg.REGISTRY}
    for row in doc["turns"]:
        assert set(row) - IDENTITY - {"breakdown_ms"} == set(reg.PER_TURN) and set(reg.PER_TURN) <= registered
        assert list(row["breakdown_ms"]) == [s for s in SEGMENTS if not METRICS[s].measured_only]
    assert set(doc["summary"]["metrics_ms"]) == set(reg.SUMMARY)


def test_the_html_shows_registered_columns_and_labels(report):
    from voicetrace.render.html import build_page

    page = build_page(report)
    table = re.search(r'<section id="turns">.*?</section>', page, re.S).group(0)
    headers = re.findall(r"<th>(.*?)</th>", table)
    registered = {m.header for m in reg.REGISTRY if m.header}
    assert headers[:3] == ["call", "turn", "at s"]
    assert set(headers[3:]) - {"caller said", "bot said"} <= registered
    assert headers[3:3 + len(reg.HTML_TABLE)] == [METRICS[k].header for k in reg.HTML_TABLE]
    data = orjson.loads(re.search(r'id="voicetrace-data">(.*?)</script>', page, re.S).group(1))
    bars = [trace["name"] for trace in data["figures"]["breakdown"]["data"]]
    assert bars and set(bars) <= {METRICS[s].label for s in SEGMENTS}


def test_every_figure_colour_key_is_registered():
    from voicetrace.render.html_figures import COLORS, LANGUAGE_BOXES

    assert set(SEGMENTS) | set(reg.STAGES) | set(LANGUAGE_BOXES) <= set(COLORS) <= set(METRICS)


def test_budgets_accept_exactly_the_registered_summary_metrics():
    for m in reg.REGISTRY:
        for name in (m.key, *m.aliases):
            if m.summary:
                budgets, _ = parse({name: {"p50": 1}})
                assert budgets[0].metric == m.key
            else:
                with pytest.raises(BudgetError, match="unknown metric"):
                    parse({name: {"p50": 1}})
    with pytest.raises(BudgetError) as err:
        parse({"latency": {"p50": 1}})
    known = str(err.value).split("known: ")[1].removesuffix(", goodput").split(", ")
    assert known == sorted(reg.SUMMARY)


def test_whatif_accepts_exactly_the_registered_stages(report):
    assert list(reg.WHATIF) == ["endpointing", "asr", "llm", "queue", "prefill", "tools", "first_sentence", "tts",
                                "transport"]
    for name, m in reg.WHATIF.items():
        assert m.segment or m.parts, name
        rows = whatif(report.turns, name, 10.0)
        assert len(rows) == len(report.turns) and rows["present"].any(), name
    with pytest.raises(ValueError):
        whatif(report.turns, "asr_final", 10.0)  # a metric key is not a stage name


def test_diff_lists_the_headline_then_each_stage(report):
    rows = diff(report.summary, report.summary)
    order = list(dict.fromkeys(rows["metric"]))
    assert order == list(reg.HEADLINE) + [s for s in reg.STAGES if s not in reg.HEADLINE] + ["goodput"]


def test_the_readme_tables_match_the_registry():
    text = README.read_text(encoding="utf-8")
    section = text.split("## The per-turn table", 1)[1].split("\n\n", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()[2:]]
    columns = list(reg.TURN_TABLE)
    columns[columns.index("v2v") + 1:columns.index("v2v") + 1] = reg.ACOUSTIC
    assert [header for header, _ in rows] == [METRICS[k].header for k in columns]
    for (header, definition), key in zip(rows, columns):
        assert METRICS[key].definition in definition, key
    budgets = re.search(r"any metric: (.*)\n.*#\s+(.*)\n", text)
    assert sorted((budgets.group(1) + " " + budgets.group(2)).split()) == sorted(reg.SUMMARY)
    stages = re.search(r"\(`(endpointing [a-z_ ]+)`\)", text).group(1).split()
    assert stages == list(reg.WHATIF)


def _without_token_events(spans: list[dict], ttft_attr: float, tpot_attr: float, drop_tokens: bool) -> list[dict]:
    for span in spans:
        if span["name"] == sc.SPAN_LLM:
            span["attributes"] += [{"key": sc.ATTR_LLM_TTFT_MS, "value": {"doubleValue": ttft_attr}},
                                   {"key": sc.ATTR_LLM_TPOT_MS, "value": {"doubleValue": tpot_attr}}]
            if drop_tokens:
                span["events"] = [e for e in span["events"] if e["name"] != sc.EVENT_TOKEN]
    return spans


def test_ttft_and_tpot_come_from_the_events_not_the_span_attributes(tmp_path):
    spans = _without_token_events(call_spans([Turn(at=1000, ttft=180, itl=20, tokens=10)]), 999.0, 999.0, False)
    row = build_report(load([write_trace(tmp_path / "a.jsonl", [spans])])).turns.iloc[0]
    assert row["ttft_ms"] == pytest.approx(180, abs=1e-6)  # first token event − llm span start
    assert row["tpot_ms"] == pytest.approx(20, abs=1e-6)  # (last − first token) / (10 − 1) = 9 · 20 / 9

    spans = _without_token_events(call_spans([Turn(at=1000, ttft=180)]), 999.0, 999.0, True)
    row = build_report(load([write_trace(tmp_path / "b.jsonl", [spans])])).turns.iloc[0]
    assert row["ttft_ms"] == pytest.approx(180, abs=1e-6)
    assert row["tpot_ms"] != row["tpot_ms"]  # no token events: no TPOT, whatever the attribute says


def test_tpot_of_a_reply_that_came_in_one_chunk(tmp_path):
    # Three tokens in one chunk: no measurable gap (no ITL), and TPOT 0 — they arrived together.
    spans = call_spans([Turn(at=1000, chunk_tokens=[3])])
    row = build_report(load([write_trace(tmp_path / "c.jsonl", [spans])])).turns.iloc[0]
    assert row["itl_p50_ms"] != row["itl_p50_ms"]
    assert row["tpot_ms"] == 0
