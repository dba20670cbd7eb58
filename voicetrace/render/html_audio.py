"""The HTML report's audio: each call's recording embedded (Ogg/Opus, base64) with a player per turn.

The recordings are the ones the report's acoustic step found beside the traces (``report.acoustic``;
voicetrace.acoustic.runs does the lookup through RunFolder) — nothing is looked up here. A turn's
waterfall knows where it sits in its call's audio: ``origin_s`` = its time zero (the caller's speech
end, or the turn's start when it has none) − the conversation span's start, which in a replay and in
``CallTrace(record_audio=True)`` is sample 0 of call.wav. The page plays from there, moves a playhead
over the waterfall as the audio plays, and seeks to a bar's start when the bar is clicked.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

import pandas as pd

from voicetrace import semconv as sc
from voicetrace.audio.compress import encode_ogg_opus
from voicetrace.audio.file import AudioInputError
from voicetrace.render.fmt import human_bytes

MAX_AUDIO_CALLS = 10
"""Calls whose audio is embedded (those with waterfalls first): a page of many calls stays small."""
NO_AUDIO_NOTE = ("no call recording beside this trace: nothing to play (a run folder keeps call.wav; in your own "
                 "agent, CallTrace(..., record_audio=True) records one)")
"""Said when there is nothing to play, so the player's absence is never silent."""
PLAYHEAD = {"type": "line", "name": "playhead", "x0": 0, "x1": 0, "yref": "paper", "y0": 0, "y1": 1,
            "line": {"color": "#c51b8a", "width": 2}}


@dataclass
class PageAudio:
    calls: list[dict] = field(default_factory=list)
    """Per embedded call: element id, label, duration_s (what the page's JSON carries)."""
    sources: list[str] = field(default_factory=list)
    """The data: URIs, in the order of ``calls`` (written into the audio elements, not the JSON)."""
    index: dict = field(default_factory=dict)
    """trace_id → position in ``calls``."""
    notes: list[str] = field(default_factory=list)
    _starts_ns: dict = field(default_factory=dict)
    _turn_starts_ns: dict = field(default_factory=dict)

    def attach(self, fig: dict, turn: pd.Series) -> None:
        """Give a turn's waterfall its place in the call's audio, clickable bars and a playhead."""
        i = self.index.get(turn["trace_id"])
        start = self._starts_ns.get((turn["trace_id"], turn["conversation_span_id"]))
        origin = turn["user_end_ns"]
        if pd.isna(origin):
            origin = self._turn_starts_ns.get((turn["trace_id"], turn["turn_span_id"]))
        if i is None or start is None or origin is None or pd.isna(origin):
            return
        bars = fig["data"][0]
        bars["customdata"] = bars["base"]  # a click seeks to the bar's start (ms on the waterfall axis)
        shapes = fig["layout"].setdefault("shapes", [])
        fig["audio"] = {"call": i, "origin_s": (int(origin) - int(start)) / 1e9, "playhead": len(shapes)}
        shapes.append(dict(PLAYHEAD))

    def player_html(self) -> str:
        if not self.calls:
            return "".join(f'<p class="note" id="audio-note">{html.escape(n)}</p>' for n in self.notes)
        elements = "".join(
            f'<audio id="{c["id"]}" class="call-audio" controls preload="auto" hidden '
            f'data-duration-s="{c["duration_s"]:.3f}" src="{src}"></audio>'
            for c, src in zip(self.calls, self.sources))
        notes = "".join(f'<p class="note warn">{html.escape(n)}</p>' for n in self.notes)
        return (f'<div id="player">{elements}<button id="play-turn" type="button" disabled>▶ play from caller speech end'
                '</button> <span class="note" id="player-note">caller left, bot right; click a bar to hear it from '
                f'its start</span></div>{notes}')


def page_audio(report, turns: pd.DataFrame) -> PageAudio:
    """The recordings of the calls in ``turns`` (the turns with waterfalls), encoded for the page."""
    out = PageAudio()
    acoustic = getattr(report, "acoustic", None)
    recordings = dict(getattr(acoustic, "recordings", None) or {})
    if not recordings:
        out.notes.append(NO_AUDIO_NOTE)
        return out
    spans = report.tables.spans
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION]
    out._starts_ns = {(t, s): int(v) for t, s, v in zip(conv["trace_id"], conv["span_id"], conv["start_ns"])}
    turn_spans = spans[spans["name"] == sc.SPAN_TURN]
    out._turn_starts_ns = {(t, s): int(v) for t, s, v in zip(turn_spans["trace_id"], turn_spans["span_id"],
                                                             turn_spans["start_ns"])}
    names = dict(zip(turns["trace_id"], turns["conversation"]))
    wanted = [t for t in dict.fromkeys(turns["trace_id"]) if t in recordings]
    total = 0
    for trace_id in wanted[:MAX_AUDIO_CALLS]:
        try:
            audio = encode_ogg_opus(recordings[trace_id])
        except AudioInputError as exc:
            out.notes.append(f"not playable here: {exc}")
            continue
        out.index[trace_id] = len(out.calls)
        out.calls.append({"id": f"audio-{len(out.calls)}", "label": str(names.get(trace_id, trace_id[:8])),
                          "duration_s": audio.duration_s})
        out.sources.append("data:audio/ogg;base64," + base64.b64encode(audio.data).decode("ascii"))
        total += len(audio.data)
    if len(wanted) > MAX_AUDIO_CALLS:
        out.notes.append(f"audio embedded for {MAX_AUDIO_CALLS} of {len(wanted)} calls with a recording "
                         f"({human_bytes(total)}); report fewer traces to hear the others")
    if not out.calls and not out.notes:
        out.notes.append(NO_AUDIO_NOTE)
    return out


CSS = "#player{display:flex;align-items:center;gap:10px;margin:6px 0} #player audio{height:32px;min-width:420px}"

JS = """
(function () {
  var data = JSON.parse(document.getElementById('voicetrace-data').textContent);
  var calls = (data.audio || {}).calls || [];
  if (!calls.length) return;
  var wf = document.getElementById('waterfall'), btn = document.getElementById('play-turn');
  var cur = null, busy = false, again = false, hooked = false;
  function elOf(w) { return w && w.audio ? document.getElementById(calls[w.audio.call].id) : null; }
  function playhead() {
    if (!cur || !wf.layout) return;
    if (busy) { again = true; return; }
    var ms = (cur.el.currentTime - cur.w.audio.origin_s) * 1000, k = cur.w.audio.playhead, u = {};
    u['shapes[' + k + '].x0'] = ms; u['shapes[' + k + '].x1'] = ms;
    busy = true;
    Plotly.relayout(wf, u).then(function () {
      wf.setAttribute('data-playhead-ms', ms.toFixed(1)); busy = false;
      if (again) { again = false; playhead(); }
    }, function (err) { busy = false; console.error('voicetrace: playhead: ' + err); });
  }
  function tick() { if (cur && !cur.el.paused) { playhead(); setTimeout(function () { requestAnimationFrame(tick); }, 50); } }
  function seek(ms) { if (!cur) return; cur.el.currentTime = Math.max(0, cur.w.audio.origin_s + ms / 1000); playhead(); }
  calls.forEach(function (c) {
    var el = document.getElementById(c.id);
    el.addEventListener('play', tick);
    el.addEventListener('seeked', playhead);
    el.addEventListener('pause', playhead);
  });
  btn.addEventListener('click', function () { if (cur) { seek(0); cur.el.play(); } });
  document.addEventListener('voicetrace:waterfall', function (ev) {
    var w = ev.detail.waterfall, el = elOf(w);
    calls.forEach(function (c) {
      var other = document.getElementById(c.id);
      if (other !== el) { other.hidden = true; if (!other.paused) other.pause(); }
    });
    cur = el ? {w: w, el: el} : null;
    btn.disabled = !cur;
    document.getElementById('player-note').textContent = cur
      ? 'caller left, bot right; click a bar to hear it from its start'
      : 'no recording of this call is embedded';
    if (!cur) return;
    el.hidden = false;
    if (el.paused) el.currentTime = w.audio.origin_s;  // cued at this turn's caller speech end
    if (!hooked) {
      hooked = true;
      wf.on('plotly_click', function (e) {
        var p = e.points && e.points[0];
        if (!p || !cur) return;
        seek(p.data.type === 'bar' ? +p.customdata : +p.x);
      });
    }
    playhead();
  });
})();
"""
