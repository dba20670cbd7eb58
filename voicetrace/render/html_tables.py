"""The HTML report's tables: every turn, the acoustic check, spans outside the span model, and the
mean breakdown line. Everything from a trace goes through ``html.escape``."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from voicetrace.analysis.metrics import ACOUSTIC, BYTES, HTML_TABLE, METRICS, SEGMENTS
from voicetrace.render import notes
from voicetrace.render.fmt import BEHIND, CONTENT_HINT, NO_RECORDING_NOTE, flagged, human_bytes, ms

MAX_TABLE_ROWS = 1000
SNIPPET_CHARS = 80
_AT = ("at_s", "at s")  # where in the call (seconds), not a metric
_BYTES = {m.column for m in METRICS.values() if m.unit == BYTES}


def _cell(col: str, value) -> str:
    if col == _AT[0]:
        return "—" if value is None or pd.isna(value) else f"{value:.1f}"
    if col in _BYTES:
        return human_bytes(value)
    try:
        return ms(float(value)) if value is not None and not pd.isna(value) else "—"
    except (TypeError, ValueError):
        return "—"


def _table_columns(turns) -> list:
    """(column, header) of the turn table; acoustic V2V and acoustic − event right after V2V when the
    run's call.wav was analysed."""
    keys = list(HTML_TABLE)
    if METRICS[ACOUSTIC[0]].column in turns:
        at = keys.index("v2v") + 1
        keys[at:at] = ACOUSTIC
    return [_AT] + [(METRICS[k].column, METRICS[k].header) for k in keys]


def acoustic_section(report) -> str:
    """Barge-ins found in the recordings and acoustic/event V2V disagreements (voicetrace.acoustic)."""
    acoustic = getattr(report, "acoustic", None)
    if acoustic is None:
        return f'<p class="note">{html.escape(NO_RECORDING_NOTE)}</p>' if len(report.turns) else ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r.conversation))}</td><td>{html.escape(str(r.turn))}</td>"
        f'<td class="n">{r.start_ms / 1000:.2f}</td><td class="n">{ms(r.overlap_ms)}</td>'
        f"<td>{html.escape(r.interrupter)}</td><td>{html.escape(r.interrupted_speaker)}</td><td>{html.escape(r.stopped)}</td></tr>"
        for r in acoustic.barge_ins.itertuples())
    barge = (f"<table><thead><tr><th>call</th><th>turn</th><th>at s</th><th>overlap ms</th><th>interrupter</th>"
             f"<th>interrupted</th><th>stopped</th></tr></thead><tbody>{rows}</tbody></table>"
             if rows else '<p class="note">no barge-ins (both sides voiced at once) in the recording</p>')
    warns = "".join(f'<p class="note warn">{html.escape(w)}</p>' for w in acoustic.warnings)
    ok = "" if warns else f'<p class="note">acoustic and event V2V agree within {acoustic.tolerance_ms:g} ms on every turn</p>'
    return ('<section id="acoustic"><h2>From the recording</h2><p class="note">an energy detector on 10 ms frames of '
            "call.wav (independent of the pipeline's VAD): ac V2V = caller speech end → bot audible, Δ ac = acoustic − event V2V</p>"
            f"{ok}{warns}<h3>Barge-ins</h3>{barge}</section>")


def _behind(rec) -> str:
    reasons = rec.get("behind_real_time")
    if not isinstance(reasons, list):
        return ""
    why = html.escape("ran behind real time: " + ", ".join(r.replace("_", " ") for r in reasons), quote=True)
    return f'<span class="behind" title="{why}">{BEHIND}</span>'


def turn_table(report, wf_index: dict) -> str:
    turns = report.turns
    columns = _table_columns(turns)
    if not len(turns):
        return '<section id="turns"><h2>Turns</h2><p class="note">no turns in the trace input</p></section>'
    content = report.content_captured
    shown = turns
    note = ""
    if len(turns) > MAX_TABLE_ROWS:
        shown = turns.sort_values("v2v_ms", ascending=False, na_position="first").head(MAX_TABLE_ROWS)
        note = f'<p class="note">showing the {MAX_TABLE_ROWS} slowest of {len(turns)} turns by V2V; every turn is in <code>--json</code></p>'
    head = "<th>call</th><th>turn</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in columns)
    if content:
        head += "<th>caller said</th><th>bot said</th>"
    budget = report.summary.budget_ms
    rows = []
    for rec in shown.to_dict("records"):
        wf = wf_index.get((rec["trace_id"], rec["turn_span_id"]), -1)
        slow = not pd.isna(rec["v2v_ms"]) and rec["v2v_ms"] > budget
        cls = ' class="over"' if slow else ""
        cells = [f"<td>{html.escape(str(rec['conversation']))}</td>",
                 f"<td>{html.escape(str(rec['turn']))}{'⚡' if rec['interrupted'] else ''}"
                 f"{_behind(rec)}</td>"]
        cells += [f'<td class="n">{html.escape(flagged(rec, c, _cell(c, rec[c])))}</td>' for c, _ in columns]
        if content:
            for col in ("transcript", "llm_output"):
                text = rec[col] if isinstance(rec[col], str) else ""
                snippet = text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")
                cells.append(f'<td class="t">{html.escape(snippet)}</td>')
        rows.append(f'<tr data-wf="{wf}"{cls}>{"".join(cells)}</tr>')
    privacy = "" if content else f'<p class="note">{html.escape(CONTENT_HINT)}</p>'
    return (f'<section id="turns"><h2>Turns</h2>{note}{privacy}<div class="scroll"><table class="turns">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            '<p class="note">ms; red rows are over the V2V budget; ⚡ the caller barged in; '
            f'{BEHIND} the turn ran behind real time (its numbers measure an overloaded machine); '
            '&lt;0! came out negative (impossible, not shown as a number); click a row for its waterfall.</p></section>')


def other_table(report) -> str:
    other = report.other
    if not len(other):
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r['service']))}</td><td>{html.escape(str(r['name']))}</td>"
        f'<td class="n">{int(r["count"])}</td><td class="n">{ms(r["p50_ms"])}</td><td class="n">{ms(r["max_ms"])}</td></tr>'
        for r in other.head(200).to_dict("records"))
    return ('<section id="other"><h2>Other spans</h2><p class="note">spans outside voicetrace\'s span model or outside any turn (e.g. a tool at call start), kept and grouped by name</p>'
            f"<table><thead><tr><th>service</th><th>name</th><th>count</th><th>p50 ms</th><th>max ms</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")


def mean_breakdown(report) -> str:
    turns = report.turns
    if not len(turns) or turns["v2v_ms"].isna().all():
        return ""
    rows = turns[turns["v2v_ms"].notna()]
    parts = []
    for seg in SEGMENTS:
        col = rows[METRICS[seg].segment_column]
        if col.notna().any():
            parts.append(f"{html.escape(METRICS[seg].label)} {ms(np.nan_to_num(col.to_numpy()).mean())}")
    extra = notes.integration_notes(turns) + notes.behind_notes(turns) + [notes.wire_note(turns) or ""]
    more = "".join(f'<p class="note">{html.escape(line)}</p>' for line in extra if line)
    return (f'<p class="note">mean over {len(rows)} turn(s): {" + ".join(parts)} = V2V {ms(rows["v2v_ms"].mean())} ms</p>'
            + more)


