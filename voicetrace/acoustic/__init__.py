"""Acoustic analysis: who speaks when, from the audio alone (no pipeline, no spans).

An energy detector on 10 ms frames, independent of the pipeline's WebRTC VAD / Silero and
smart-turn, finds speech segments per channel of a dual-channel recording. From those:

- ``levels``: stream a recording → per-channel frame levels (dBFS), any rate and format (I/O);
- ``vad``: frame levels → speech segments (pure);
- ``conversation``: caller and agent segments → turns, response gaps, barge-ins, silences, talk ratio (pure);
- ``check``: event turns (spans) beside the acoustic ones: acoustic V2V and the disagreement (pure);
- ``runs``: the acoustic check of run folders (finds ``call.wav``; I/O);
- ``trace``: an analysis → OTLP JSON lines spans (one per speech segment, turns as parents).
"""
