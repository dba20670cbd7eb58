"""docs/METRICS.md's table is the metric registry, row for row."""

from __future__ import annotations

from pathlib import Path

from voicetrace import metric_names as mn

DOC = Path(__file__).resolve().parents[2] / "docs" / "METRICS.md"


def _table_rows() -> list[list[str]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_docs_table_lists_every_instrument_with_its_kind_unit_prometheus_name_and_attributes():
    documented = [
        (name.strip("`"), kind, unit.strip("`"), prom.strip("`"), tuple(a.strip(" `") for a in attrs.split(",")))
        for name, kind, unit, prom, attrs, _ in _table_rows()
    ]
    registry = [(i.name, i.kind, i.unit, mn.prometheus_name(i), i.attributes) for i in mn.INSTRUMENTS]
    assert documented == registry


def test_genai_names_come_from_the_semantic_conventions_with_their_units():
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as g

    assert {i.name: i.unit for i in mn.INSTRUMENTS if i.name.startswith("gen_ai.")} == {
        g.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK: "s", g.GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK: "s",
        g.GEN_AI_CLIENT_OPERATION_DURATION: "s", g.GEN_AI_CLIENT_TOKEN_USAGE: "{token}"}
    assert all(i.name.startswith(("voice.", "gen_ai.")) for i in mn.INSTRUMENTS)


def test_latency_buckets_are_dense_between_100_ms_and_2_s():
    b = mn.LATENCY_BOUNDARIES_MS
    inside = [hi - lo for lo, hi in zip(b, b[1:]) if 100 <= lo < 2000]
    assert max(inside) <= 200 and b[-1] == 30_000
