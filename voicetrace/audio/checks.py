"""Check a call recording before it is replayed: decode it once (streaming), say what is wrong.

``check_call`` reads the whole file block by block (memory stays flat for an hour-long call),
so corrupt data fails before any server starts instead of half-way through the replay. What
is odd but usable (a WAV whose header promises more audio than the file holds, a caller
channel that is all silence) comes back as one-line notes the run prints as warnings.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from voicetrace.audio.file import AudioInputError, read_blocks
from voicetrace.audio.source import CallAudio

_BLOCK_SECONDS = 4

def wav_declared_data_bytes(path: Path) -> tuple[int, int] | None:
    """(bytes the WAV header's data chunk declares, bytes the file actually holds after it).

    None when the file is not a RIFF/WAVE file or its data size is unknown (RF64, streaming 0/−1)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
            if len(head) < 12 or head[:4] not in (b"RIFF", b"RIFX") or head[8:12] != b"WAVE":
                return None
            fmt = "<I" if head[:4] == b"RIFF" else ">I"
            size = path.stat().st_size
            offset = 12
            while offset + 8 <= size:
                handle.seek(offset)
                chunk = handle.read(8)
                chunk_id, (chunk_size,) = chunk[:4], struct.unpack(fmt, chunk[4:8])
                if chunk_id == b"data":
                    if chunk_size in (0, 0xFFFFFFFF):
                        return None
                    return chunk_size, size - offset - 8
                offset += 8 + chunk_size + (chunk_size & 1)
    except (OSError, struct.error):
        return None
    return None


def check_call(call: CallAudio) -> list[str]:
    """Decode the caller channel once; raise AudioInputError (one line) if the data is corrupt.

    Returns notes (one line each) about a usable but suspicious recording."""
    notes: list[str] = []
    declared = wav_declared_data_bytes(call.path)
    if declared is not None and declared[0] > declared[1] + 1:
        promised_ms = declared[0] / max(1, declared[1]) * call.duration_ms if declared[1] else float("inf")
        notes.append(
            f"{call.path.name}: truncated: the header promises {promised_ms / 1000:.1f} s of audio, the file holds "
            f"{call.duration_ms / 1000:.1f} s; replaying what is there"
        )
    peak = 0.0
    decoded = 0
    for block in read_blocks(call, _BLOCK_SECONDS, [call.caller_channel]):
        if block.size:
            decoded += len(block)
            peak = max(peak, float(np.abs(block).max()))
    if decoded == 0:
        raise AudioInputError(f"{call.path}: contains no audio")
    if peak == 0.0:
        notes.append(
            f"{call.path.name}: the caller channel ({call.caller_channel}) is all silence: expect no turns"
        )
    return notes
