"""Renderers for ``voicetrace analyze`` (a ConversationAnalysis): terminal, JSON and one self-contained HTML file.

Same interface as the other renderers, ``render(analysis, out)``; ``renderer(name)`` picks one.
"""

from __future__ import annotations

import html
import math

import orjson
import pandas as pd
from rich.console import Console
from rich.table import Table

from voicetrace.analysis.summary import stat
from voicetrace.render.fmt import ms, share, stat_ms

MAX_TURN_ROWS = 200


def _clean(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 3)
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: _clean(v) for k, v in r.items()} for r in frame.to_dict("records")]


def summary_dict(a) -> dict:
    gaps = stat(a.turns["response_gap_ms"]) if len(a.turns) else stat([])
    return {
        "duration_ms": round(a.duration_ms, 3),
        "turns": len(a.turns),
        "answered_turns": int(a.turns["response_gap_ms"].notna().sum()) if len(a.turns) else 0,
        "response_gap_ms": gaps.to_dict(),
        "barge_ins": len(a.barge_ins),
        "caller_barge_ins": int((a.barge_ins["interrupter"] == "caller").sum()) if len(a.barge_ins) else 0,
        "agent_barge_ins": int((a.barge_ins["interrupter"] == "agent").sum()) if len(a.barge_ins) else 0,
        "overlap_ms": a.overlap_ms,
        "long_silences": len(a.silences),
        "long_silence_ms": a.long_silence_ms,
        "caller_talk_ms": a.caller_talk_ms,
        "agent_talk_ms": a.agent_talk_ms,
        "silence_ms": round(a.silence_ms, 3),
        "talk_ratio_caller": _clean(a.talk_ratio),
        "greeting_segments": a.greeting_segments,
    }


def analysis_dict(a) -> dict:
    return {
        "recording": a.meta,
        "summary": summary_dict(a),
        "turns": _records(a.turns),
        "barge_ins": _records(a.barge_ins),
        "long_silences": _records(a.silences),
        "segments": {"caller": a.caller_segments.tolist(), "agent": a.agent_segments.tolist()},
    }


def render_json(a, out) -> None:
    out.write(orjson.dumps(analysis_dict(a), option=orjson.OPT_INDENT_2).decode() + "\n")


def _s(value_ms) -> str:
    return "—" if value_ms is None or value_ms != value_ms else f"{value_ms / 1000:.2f}"


def render_terminal(a, out) -> None:
    console = Console(file=out, width=None if out.isatty() else 140)
    meta = a.meta
    console.print(f"{meta.get('recording', '')}: {a.duration_ms / 1000:,.1f} s, {meta.get('sample_rate')} Hz, "
                  f"caller channel {meta.get('caller_channel')}, agent channel {meta.get('agent_channel')}", highlight=False)
    if not len(a.turns):
        console.print("no caller speech found" + ("" if len(a.agent_segments) else " (and no agent speech)"))
    elif len(a.turns) > MAX_TURN_ROWS:
        console.print(f"{len(a.turns)} turns: per-turn rows are in --json and the HTML report (-o)")
    else:
        table = Table(title="per turn (response gap = agent onset − caller speech end; negative: talked over)",
                      title_justify="left", pad_edge=False)
        for h in ("turn", "caller s", "caller end s", "agent s", "gap ms", "caller seg", "agent seg"):
            table.add_column(h, justify="right", no_wrap=True)
        for r in a.turns.itertuples():
            table.add_row(f"{r.turn}{'⚡' if r.interrupted else ''}", _s(r.caller_start_ms), _s(r.caller_end_ms),
                          _s(r.agent_start_ms), ms(r.response_gap_ms), str(r.caller_segments), str(r.agent_segments))
        console.print(table)
    for r in a.barge_ins.itertuples():
        console.print(f"barge-in turn {r.turn} at {_s(r.start_ms)} s: {r.interrupter} cut in on {r.interrupted_speaker}, "
                      f"{ms(r.overlap_ms)} ms overlap, {r.stopped} stopped", highlight=False)
    for r in a.silences.itertuples():
        console.print(f"long silence {_s(r.start_ms)}–{_s(r.end_ms)} s: {ms(r.duration_ms)} ms (after the {r.after})",
                      highlight=False)
    s = summary_dict(a)
    gaps = stat(a.turns["response_gap_ms"]) if len(a.turns) else stat([])
    console.print(
        f"response gap over {gaps.n} answered turn(s): p50 {stat_ms(gaps, 'p50')}, p90 {stat_ms(gaps, 'p90')}, "
        f"p95 {stat_ms(gaps, 'p95')}, max {ms(gaps.value('max'))} ms", highlight=False)
    console.print(
        f"talk: caller {a.caller_talk_ms / 1000:,.1f} s ({share(a.talk_ratio)}), agent {a.agent_talk_ms / 1000:,.1f} s, "
        f"both at once {a.overlap_ms / 1000:,.1f} s, silence {a.silence_ms / 1000:,.1f} s; "
        f"{s['barge_ins']} barge-in(s) ({s['caller_barge_ins']} by the caller), "
        f"{s['long_silences']} silence(s) ≥ {a.long_silence_ms:,.0f} ms", highlight=False)


def _table(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> str:
    if not len(frame):
        return '<p class="note">none</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in columns)
    rows = []
    for rec in frame.to_dict("records"):
        cells = []
        for col, _ in columns:
            v = rec[col]
            text = ms(v) if col.endswith("_ms") and isinstance(v, float) else ("—" if v is None else str(v))
            cells.append(f'<td class="n">{html.escape(text)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _timeline(a) -> dict:
    """A plotly figure: caller and agent speech as bars on one time axis, overlaps and long silences marked."""
    def bars(segs, name, y, color):
        return {"type": "bar", "orientation": "h", "name": name, "y": [y] * len(segs),
                "base": [s / 1000 for s in segs[:, 0]], "x": [(e - s) / 1000 for s, e in segs],
                "marker": {"color": color}, "hovertemplate": "%{base:.2f} s + %{x:.2f} s<extra>" + name + "</extra>"}
    data = [bars(a.caller_segments, "caller", "caller", "#4c78a8"), bars(a.agent_segments, "agent", "agent", "#f58518")]
    if len(a.barge_ins):
        segs = a.barge_ins[["start_ms", "end_ms"]].to_numpy()
        data.append(bars(segs, "both (barge-in)", "overlap", "#e45756"))
    shapes = [{"type": "rect", "xref": "x", "yref": "paper", "x0": r.start_ms / 1000, "x1": r.end_ms / 1000,
               "y0": 0, "y1": 1, "fillcolor": "#999", "opacity": 0.15, "line": {"width": 0}}
              for r in a.silences.itertuples()]
    layout = {"barmode": "overlay", "height": 260, "margin": {"l": 70, "r": 20, "t": 10, "b": 40},
              "xaxis": {"title": {"text": "s from the start of the recording"}}, "shapes": shapes,
              "yaxis": {"categoryorder": "array", "categoryarray": ["overlap", "agent", "caller"]}}
    return {"data": data, "layout": layout}


def render_html(a, out) -> None:
    from voicetrace.render.html import _CSS, _json_for_script, plotly_js

    s = summary_dict(a)
    gaps = stat(a.turns["response_gap_ms"]) if len(a.turns) else stat([])
    cards = [("duration s", f"{a.duration_ms / 1000:,.1f}"), ("turns", str(s["turns"])),
             ("gap p50 ms", stat_ms(gaps, "p50")), ("gap p90 ms", stat_ms(gaps, "p90")),
             ("gap p95 ms", stat_ms(gaps, "p95")), ("gap max ms", ms(gaps.value("max"))),
             ("barge-ins", str(s["barge_ins"])), ("overlap ms", ms(a.overlap_ms)),
             (f"silences ≥ {a.long_silence_ms:,.0f} ms", str(s["long_silences"])),
             ("caller share of talk", share(a.talk_ratio))]
    body = "".join(f'<div class="card"><div class="v">{html.escape(v)}</div><div class="k">{html.escape(k)}</div></div>'
                   for k, v in cards)
    meta = a.meta
    turns = a.turns.head(5000)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>voicetrace analyze</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style>
<script>{plotly_js()}</script>
</head><body>
<h1>voicetrace analyze</h1>
<p class="note">{html.escape(str(meta.get('recording', '')))}: {meta.get('sample_rate')} Hz, {html.escape(str(meta.get('format', '')))},
caller channel {meta.get('caller_channel')}, agent channel {meta.get('agent_channel')}; speech from an energy detector on 10 ms frames.
All times in ms unless marked s.</p>
<section id="headline"><div class="cards">{body}</div></section>
<section id="timeline-section"><h2>Who speaks when</h2><div class="plot" id="timeline"></div></section>
<section id="turns"><h2>Turns</h2><p class="note">response gap = agent onset − caller speech end (negative: the agent
started before the caller finished); ⚡ interrupted = the caller talked over the agent's reply</p><div class="scroll">
{_table(turns, [("turn", "turn"), ("caller_start_ms", "caller start"), ("caller_end_ms", "caller end"),
                ("agent_start_ms", "agent start"), ("response_gap_ms", "response gap"), ("interrupted", "interrupted"),
                ("caller_segments", "caller segments"), ("agent_segments", "agent segments")])}</div></section>
<section id="barge-ins"><h2>Barge-ins</h2>
{_table(a.barge_ins, [("turn", "turn"), ("start_ms", "start"), ("overlap_ms", "overlap"), ("interrupter", "interrupter"),
                      ("interrupted_speaker", "interrupted"), ("stopped", "stopped first")])}</section>
<section id="silences"><h2>Long silences (≥ {a.long_silence_ms:,.0f} ms)</h2>
{_table(a.silences, [("start_ms", "start"), ("end_ms", "end"), ("duration_ms", "duration"), ("after", "after")])}</section>
<section id="talk"><h2>Talk</h2><p>caller {a.caller_talk_ms / 1000:,.1f} s ({share(a.talk_ratio)} of talk), agent
{a.agent_talk_ms / 1000:,.1f} s, both at once {a.overlap_ms / 1000:,.1f} s, nobody {a.silence_ms / 1000:,.1f} s</p></section>
<script type="application/json" id="voicetrace-data">{_json_for_script(_timeline(a))}</script>
<script>
(function () {{
  var fig = JSON.parse(document.getElementById('voicetrace-data').textContent);
  Plotly.newPlot('timeline', fig.data, fig.layout, {{displaylogo: false, responsive: true}});
}})();
</script>
</body></html>
"""
    out.write(page)


def renderer(name: str):
    return {"terminal": render_terminal, "json": render_json, "html": render_html}[name]
