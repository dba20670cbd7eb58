"""Regenerate the speech-edge corpus (tests/data/edges/): real human lines, Piper bot replies, truth.

Caller lines are REAL human recordings: the channel announcements Debian's alsa-utils ships in
/usr/share/sounds/alsa (a woman saying "Front center", "Rear left", ...; 48 kHz mono). They are GPL-2,
so they are not committed: the tests make each clip from the installed package (``human_clip``) and
truth.json holds only the measurements. Bot replies
are Piper (the reference pipeline's TTS voice) with its own leading near-silence, as the pipeline
plays them. Each clip is resampled to the pipeline's 16 kHz and written small; calls are assembled
from them (and noise mixed in) at test time by tests/edges_corpus.py, deterministically.

Truth is measured ONCE here, on each clean clip as the pipeline hears it (resampled to 16 kHz, band
limited to 8 kHz: a fricative's energy above that never reaches the call), before any mixing, by a
method the detector does not use: the RMS over a 10 ms window centred on every
sample (sample resolution, no frame grid); speech starts at the first sample whose window reaches
TRUTH_DBFS and ends at the last. The same −40 dBFS level samples/make_samples.py trims the sample
calls' lines to (there on a 10 ms frame grid), so all truth in the corpus means one thing.

    apt-get install alsa-utils   # scripts/install-test-deps.sh
    .venv/bin/python tests/data/edges/make_edges_corpus.py

Piper samples its own noise, so a rerun writes slightly different bot clips; their truth is measured
with them, so the files and truth.json always belong together (a unit test checks it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

HERE = Path(__file__).parent
ALSA_SOUNDS = Path(os.environ.get("ALSA_SOUNDS", "/usr/share/sounds/alsa"))
HUMAN_CLIPS = ["Front_Center", "Front_Left", "Front_Right", "Rear_Center", "Rear_Left", "Rear_Right",
               "Side_Left", "Side_Right"]
BOT_REPLIES = [
    "Sure, let me check that for you.",
    "Your claim is being processed.",
    "The payment should arrive within five business days.",
    "You're welcome, goodbye.",
]
RATE = 16_000
TRUTH_DBFS = -40.0
TRUTH_WINDOW_MS = 10.0


def centred_rms_dbfs(x: np.ndarray, rate: int, window_ms: float = TRUTH_WINDOW_MS) -> np.ndarray:
    """Level (dBFS) of the ``window_ms`` window centred on every sample (edges padded with zeros)."""
    half = int(round(rate * window_ms / 2000))
    power = np.concatenate([np.zeros(half + 1), x.astype(np.float64) ** 2, np.zeros(half)])
    c = np.cumsum(power)
    mean = (c[2 * half + 1:] - c[: -(2 * half + 1)]) / (2 * half + 1)
    return 10 * np.log10(np.maximum(mean, 1e-12))


def truth_edges(x: np.ndarray, rate: int) -> tuple[float, float]:
    """(start_s, end_s) of the speech in a clean clip: first and last sample at or over TRUTH_DBFS."""
    loud = np.flatnonzero(centred_rms_dbfs(x, rate) >= TRUTH_DBFS)
    return loud[0] / rate, (loud[-1] + 1) / rate


def to_pipeline_rate(x: np.ndarray, rate: int) -> np.ndarray:
    return soxr.resample(x.astype(np.float32), rate, RATE) if rate != RATE else x.astype(np.float32)


def _pcm16_exact(x: np.ndarray) -> np.ndarray:
    """The clip exactly as its 16-bit file will hold it (truth is measured on what is committed)."""
    return (np.clip(x, -1.0, 32767 / 32768) * 32768).round().astype(np.int16) / 32768.0


def human_clip(name: str) -> np.ndarray:
    """One alsa-utils recording as the pipeline hears it (16 kHz, 16-bit exact). Made from the installed
    package every time, never committed: the recordings are alsa-utils' (GPL-2)."""
    x, rate = sf.read(ALSA_SOUNDS / f"{name}.wav", dtype="float64")
    return _pcm16_exact(to_pipeline_rate(x, rate))


def human() -> dict:
    out = {}
    for name in HUMAN_CLIPS:
        x, rate = sf.read(ALSA_SOUNDS / f"{name}.wav", dtype="float64")
        clip = human_clip(name)
        start_s, end_s = truth_edges(clip, RATE)
        src_start_s, src_end_s = truth_edges(x, rate)
        out[name] = {"file": f"human/{name}.wav", "source": str(ALSA_SOUNDS / f"{name}.wav"), "source_rate": rate,
                     "speech_start_s": round(start_s, 6), "speech_end_s": round(end_s, 6),
                     "source_speech_start_s": round(src_start_s, 6), "source_speech_end_s": round(src_end_s, 6)}
    return out


def bot() -> dict:
    from piper import PiperVoice

    from voicetrace.components import PIPER_VOICE, piper_voice_dir

    voice = PiperVoice.load(str(piper_voice_dir() / f"{PIPER_VOICE}.onnx"))
    out = {}
    (HERE / "bot").mkdir(exist_ok=True)
    for i, text in enumerate(BOT_REPLIES, 1):
        # pipecat's PiperTTSService: default synthesis settings, one chunk per sentence.
        x = np.concatenate([c.audio_float_array for c in voice.synthesize(text)]).astype(np.float64)
        rate = voice.config.sample_rate
        clip = _pcm16_exact(to_pipeline_rate(x, rate))
        start_s, end_s = truth_edges(clip, RATE)
        name = f"reply_{i}"
        sf.write(HERE / "bot" / f"{name}.wav", clip, RATE, subtype="PCM_16")
        out[name] = {"file": f"bot/{name}.wav", "text": text, "source_rate": rate,
                     "onset_s": round(start_s, 6), "end_s": round(end_s, 6)}
    return out


def main() -> None:
    truth = {
        "definition": (f"first/last sample whose centred {TRUTH_WINDOW_MS:g} ms RMS is >= {TRUTH_DBFS:g} dBFS, "
                       "measured on the clean 16 kHz clip before mixing (source_*: on the alsa source at 48 kHz)"),
        "sample_rate": RATE,
        "human": human(),
        "bot": bot(),
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    for kind in ("human", "bot"):
        for name, t in truth[kind].items():
            print(kind, name, {k: v for k, v in t.items() if k.endswith("_s")})


if __name__ == "__main__":
    main()
