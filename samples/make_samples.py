"""Regenerate samples/calls/*.wav and their scripts (*.json) from the caller lines below.

Caller speech is synthesised with Piper (the en_US-joe-medium voice from PyPI), pitched down
by playing it back slower so the caller does not sound like the bot, resampled to 16 kHz mono,
and placed on the call's timeline with pauses long enough for the bot to answer. The JSON
beside each WAV gives every line's text, key words and measured speech start/end.

    .venv/bin/python samples/make_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr
from piper import PiperVoice, SynthesisConfig

from voicetrace.components import PIPER_VOICE, piper_voice_dir

OUT = Path(__file__).parent / "calls"
RATE = 16_000
LEAD_IN_S = 1.0
TAIL_S = 1.0
# Piper speaks at 22,050 Hz; reading it as 19,500 Hz lowers pitch and pace by ~12%.
CALLER_PLAYBACK_RATE = 19_500

# (text, key words the transcript must contain, pause after the line in seconds)
CALLS: dict[str, list[tuple[str, list[str], float]]] = {
    "claim_status": [
        ("Hi, I'm calling about my car insurance claim.", ["claim"], 10.0),
        ("The claim number is four five seven one two.", ["claim"], 10.0),
        ("When will the repair payment arrive?", ["payment"], 10.0),
        ("Okay, thank you for your help.", ["thank"], TAIL_S),
    ],
    "policy_question": [
        ("Hello, I have a question about my home insurance policy.", ["policy"], 10.0),
        ("Does my policy cover water damage from a burst pipe?", ["water"], 10.0),
        ("What is my deductible for that?", ["deductible"], 10.0),
        ("Great, that is all I needed.", ["great"], TAIL_S),
    ],
    # The caller cuts in while the bot is answering the first question (a barge-in).
    "barge_in": [
        ("Hi, can you tell me what my home policy covers?", ["policy"], 6.0),
        ("Sorry, actually I only need my deductible.", ["deductible"], 10.0),
        ("Thanks, bye.", ["thanks"], TAIL_S),
    ],
    "address_change": [
        ("Hi, I just moved and I need to update my address.", ["address"], 10.0),
        ("The new address is twelve Oak Street in Springfield.", ["oak", "street"], 10.0),
        ("Yes, please change it on all of my policies. Thanks, goodbye.", ["change"], TAIL_S),
    ],
}


def voiced_bounds(samples: np.ndarray, rate: int, threshold_dbfs: float = -40.0) -> tuple[int, int]:
    """First and last sample of 10 ms frames louder than the threshold."""
    frame = rate // 100
    n = len(samples) // frame
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame).astype(np.float64) ** 2, axis=1) + 1e-12)
    loud = np.flatnonzero(20 * np.log10(rms) > threshold_dbfs)
    return int(loud[0] * frame), int((loud[-1] + 1) * frame)


def synthesise(voice: PiperVoice, text: str) -> np.ndarray:
    config = SynthesisConfig(length_scale=1.0, noise_scale=0.6, noise_w_scale=0.7)
    audio = np.concatenate([chunk.audio_float_array for chunk in voice.synthesize(text, config)])
    audio = soxr.resample(audio, CALLER_PLAYBACK_RATE, RATE)
    start, end = voiced_bounds(audio, RATE)
    return audio[start:end]


# A short Hindi call, spoken by espeak-ng (robotic but Whisper base understands it), for
# --language hi. Key words are checked loosely: the transcript must be in Devanagari.
HINDI_LINES = [("नमस्ते, मुझे अपने बीमा दावे की स्थिति जाननी है।", [], TAIL_S)]


def espeak(text: str, voice: str) -> np.ndarray:
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", "140", "-w", tmp.name, text], check=True)
        audio, rate = sf.read(tmp.name, dtype="float32")
    audio = soxr.resample(audio, rate, RATE)
    start, end = voiced_bounds(audio, RATE)
    return audio[start:end]


def write_call(name: str, lines, speak) -> tuple[np.ndarray, list[dict]]:
    pieces = [np.zeros(int(LEAD_IN_S * RATE), dtype=np.float32)]
    cursor = len(pieces[0])
    script = []
    for text, keywords, pause_s in lines:
        speech = speak(text)
        script.append({
            "text": text,
            "keywords": keywords,
            "speech_start_s": round(cursor / RATE, 3),
            "speech_end_s": round((cursor + len(speech)) / RATE, 3),
        })
        pause = np.zeros(int(pause_s * RATE), dtype=np.float32)
        pieces += [speech, pause]
        cursor += len(speech) + len(pause)
    audio = np.concatenate(pieces)
    sf.write(OUT / f"{name}.wav", audio, RATE, subtype="PCM_16")
    return audio, script


def main() -> None:
    voice_dir = piper_voice_dir()
    if voice_dir is None:
        raise SystemExit("Piper voice not installed: run `make install`")
    voice = PiperVoice.load(str(voice_dir / f"{PIPER_VOICE}.onnx"))
    OUT.mkdir(parents=True, exist_ok=True)
    calls = {name: (lines, lambda text: synthesise(voice, text)) for name, lines in CALLS.items()}
    calls["hindi_claim"] = (HINDI_LINES, lambda text: espeak(text, "hi"))
    for name, (lines, speak) in calls.items():
        audio, script = write_call(name, lines, speak)
        meta = {
            "call": f"{name}.wav",
            "sample_rate": RATE,
            "duration_s": round(len(audio) / RATE, 3),
            "voice": "espeak-ng hi" if name == "hindi_claim" else f"{PIPER_VOICE} (Piper), played at {CALLER_PLAYBACK_RATE} Hz",
            "lines": script,
        }
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        print(f"{name}.wav: {meta['duration_s']} s, {len(lines)} caller turns")

if __name__ == "__main__":
    main()
