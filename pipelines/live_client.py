"""Call the live agent: stream a recorded call to its WebSocket in real time, record what it says back.

    python pipelines/live_client.py samples/calls/claim_status.wav --url ws://127.0.0.1:8765

The caller's audio goes out as 20 ms frames of 16 kHz mono PCM, one every 20 ms (pipecat's protobuf
``AudioRawFrame``, what ``ProtobufFrameSerializer`` reads); after the recording the line carries
silence, as a phone line would. The agent's audio is "played" as it arrives, each chunk right after
the previous one, and recorded on the call's timeline: OUT/bot.wav (the agent) and OUT/call.wav
(caller left, agent right). The client hangs up once the agent has answered the caller's last line
and then been quiet for ``--quiet-s`` (or after ``--max-tail-s`` of silence, whatever came back).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from voicetrace.acoustic.vad import speech_segments
from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import (
    FRAME_BYTES,
    FRAME_MS,
    PIPELINE_SAMPLE_RATE,
    AudioInputError,
    iter_pipeline_frames,
    open_call,
)

_FRAME_NS = FRAME_MS * 1_000_000
_SILENCE = b"\x00" * FRAME_BYTES
_REPLY_GAP_NS = 300_000_000
"""Agent audio after this much quiet counts as a new reply."""


def last_speech_end_ns(call) -> int:
    """Where the caller's last line ends in the recording (energy VAD on 10 ms frames); 0 if silent."""
    levels = []
    for pcm in iter_pipeline_frames(call):
        x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64) / 32768.0
        for half in np.split(x, 2):  # the energy VAD works on 10 ms frames
            energy = float(np.mean(half * half))
            levels.append(10 * np.log10(energy) if energy > 0 else -120.0)
    segments = speech_segments(np.array(levels))
    return int(segments[-1, 1]) * 1_000_000 if len(segments) else 0


@dataclass
class Playback:
    """The agent's audio on the call's timeline (ns since the call started), as a caller hears it."""

    recorder: CallRecorder
    start_ns: int
    play_until_ns: int = 0
    reply_starts_ns: list[int] = field(default_factory=list)
    audio_ns: int = 0
    interruptions: int = 0

    def add(self, pcm: bytes, sample_rate: int) -> None:
        arrived = time.monotonic_ns() - self.start_ns
        # The agent sends in real time, a chunk ahead: a chunk arriving while the last one plays follows it.
        play_at = max(arrived, self.play_until_ns)
        if not self.reply_starts_ns or play_at - self.play_until_ns > _REPLY_GAP_NS:
            self.reply_starts_ns.append(play_at)
        duration_ns = len(pcm) // 2 * 1_000_000_000 // sample_rate
        self.recorder.add_bot(play_at, pcm, sample_rate)
        self.play_until_ns = play_at + duration_ns
        self.audio_ns += duration_ns

    def answered(self, after_ns: int) -> bool:
        return any(start >= after_ns for start in self.reply_starts_ns)


async def receive(ws, playback: Playback) -> None:
    import websockets
    from pipecat.frames.protobufs import frames_pb2

    try:
        async for message in ws:
            frame = frames_pb2.Frame.FromString(message)
            kind = frame.WhichOneof("frame")
            if kind == "audio":
                playback.add(frame.audio.audio, frame.audio.sample_rate or PIPELINE_SAMPLE_RATE)
            elif kind == "interruption":  # the agent heard the caller cut in and stopped its reply
                playback.interruptions += 1
    except websockets.ConnectionClosed:
        pass


def audio_message(pcm: bytes) -> bytes:
    from pipecat.frames.protobufs import frames_pb2

    audio = frames_pb2.AudioRawFrame(audio=pcm, sample_rate=PIPELINE_SAMPLE_RATE, num_channels=1)
    return frames_pb2.Frame(audio=audio).SerializeToString()


async def place_call(call_path: Path, url: str, out: Path, quiet_s: float, max_tail_s: float) -> Playback:
    from websockets.asyncio.client import connect

    call = open_call(call_path)
    last_line_ns = last_speech_end_ns(call)
    async with connect(url, max_size=None) as ws:
        out.mkdir(parents=True, exist_ok=True)
        recorder = CallRecorder(out)
        try:
            start_ns = time.monotonic_ns()
            playback = Playback(recorder, start_ns)
            receiver = asyncio.ensure_future(receive(ws, playback))
            index = 0

            async def send(pcm: bytes) -> None:
                nonlocal index
                # Absolute deadlines: scheduling jitter never accumulates into drift.
                delay_ns = start_ns + index * _FRAME_NS - time.monotonic_ns()
                if delay_ns > 0:
                    await asyncio.sleep(delay_ns / 1e9)
                recorder.add_caller(index * _FRAME_NS, pcm)
                await ws.send(audio_message(pcm))
                index += 1

            for pcm in iter_pipeline_frames(call):
                await send(pcm)
            tail_end_ns = index * _FRAME_NS + int(max_tail_s * 1e9)
            while index * _FRAME_NS < tail_end_ns:
                now_ns = index * _FRAME_NS
                if playback.answered(last_line_ns) and now_ns - playback.play_until_ns > quiet_s * 1e9:
                    break  # the last line has its answer and the agent has finished saying it
                await send(_SILENCE)
            await ws.close()
            await receiver
        finally:
            recorder.close()
    return playback


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Stream a recorded call to the live agent and record its replies.")
    p.add_argument("call", type=Path, help="The caller's side of a call (WAV; FLAC/OGG also read).")
    p.add_argument("--url", default="ws://127.0.0.1:8765")
    p.add_argument("--out", type=Path, default=None, help="Folder for bot.wav and call.wav (default: runs/client-<time>).")
    p.add_argument("--quiet-s", type=float, default=2.0, help="Hang up this long after the last reply ends.")
    p.add_argument("--max-tail-s", type=float, default=30.0, help="Hang up at most this long after the recording.")
    args = p.parse_args(argv)
    out = args.out or Path("runs") / f"client-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    import websockets

    try:
        playback = asyncio.run(place_call(args.call, args.url, out, args.quiet_s, args.max_tail_s))
    except AudioInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except websockets.ConnectionClosed as exc:
        print(f"error: the agent ended the call early: {exc}", file=sys.stderr)
        return 4
    except (OSError, websockets.InvalidHandshake) as exc:  # refused, unreachable, not a WebSocket
        print(f"error: cannot reach the agent at {args.url}: {exc.strerror or exc}", file=sys.stderr)
        return 4
    print(f"hung up: {len(playback.reply_starts_ns)} replies, {playback.audio_ns / 1e9:.1f} s of agent audio, "
          f"{playback.interruptions} interruptions; {out / 'call.wav'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
