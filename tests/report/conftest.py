from __future__ import annotations

import pytest

from tests.report.synth import Turn, call_spans, many_calls, write_trace

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture
def traces(tmp_path):
    """Trace files every renderer is tried on: empty, one turn, many calls (with hostile transcripts)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    one = write_trace(tmp_path / "one.jsonl", [call_spans([Turn(at=1500, transcript=XSS, language="en",
                                                                prefill=40, queue=5, tool=30, input_tokens=120)])])
    many = write_trace(tmp_path / "many.jsonl", many_calls(8, 6, transcript=XSS))
    return {"empty": empty, "one": one, "many": many}
