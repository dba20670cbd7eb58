"""The speech-edge corpus: its committed clips and truth.json belong together, and calls keep their truth."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data.edges.make_edges_corpus import truth_edges
from tests.edges_corpus import RATE, _truth, all_calls, bot_replies, clean_calls, human_calls, speech_power, with_noise


def test_committed_clips_match_their_truth():
    """Re-measured on the committed 16 kHz clips: the same sample."""
    truth = _truth()
    from tests.edges_corpus import _clip

    for kind, start_key, end_key in (("human", "speech_start_s", "speech_end_s"), ("bot", "onset_s", "end_s")):
        for name, entry in truth[kind].items():
            start_s, end_s = truth_edges(_clip(entry), RATE)
            assert abs(start_s - entry[start_key]) < 1e-4, (name, start_s, entry[start_key])
            assert abs(end_s - entry[end_key]) < 1e-4, (name, end_s, entry[end_key])


def test_human_call_lines_sit_where_truth_says():
    for call in human_calls():
        for s, e in call.lines:
            lead = call.audio[int((s - 0.2) * RATE):int((s - 0.02) * RATE)]
            assert np.sqrt(np.mean(lead.astype(np.float64) ** 2)) < 10 ** (-50 / 20), (call.name, s)
            start_s, end_s = truth_edges(call.audio[int((s - 0.1) * RATE):int((e + 0.1) * RATE)], RATE)
            assert abs(start_s - 0.1) < 0.002 and abs(end_s - (e - s + 0.1)) < 0.002, (call.name, s, e)


@pytest.mark.parametrize("snr_db", [20.0, 10.0])
def test_noisy_variants_have_the_snr_they_say(snr_db):
    call = clean_calls()[5]
    noisy = with_noise(call, snr_db)
    noise = (noisy.audio - call.audio).astype(np.float64)
    measured = 10 * np.log10(speech_power(call) / np.mean(noise * noise))
    assert abs(measured - snr_db) < 0.2
    assert noisy.lines == call.lines


def test_corpus_shape():
    calls = all_calls()
    assert {c.kind for c in calls} == {"clean", "snr20", "snr10"}
    assert sum(len(c.lines) for c in calls if c.kind == "clean" and c.corpus == "human") == 12
    assert len(bot_replies()) == 4
