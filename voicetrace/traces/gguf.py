"""Read a model's attention shape from a GGUF file's header (no dependencies, header only).

GGUF v2/v3: magic ``GGUF``, u32 version, u64 tensor count, u64 metadata count, then metadata
key/value pairs. We need ``<arch>.block_count``, ``<arch>.attention.head_count_kv`` (defaults to
head_count), ``<arch>.attention.key_length``/``value_length`` (default embedding_length / head_count).
"""

from __future__ import annotations

import struct
from pathlib import Path

from voicetrace.analysis.kvcache import ModelShape
from voicetrace.errors import InputError

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFError(InputError):
    """Not a GGUF file, or the shape keys are missing; one line for the user."""


def _read(f, fmt: str):
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f) -> str:
    return f.read(_read(f, "<Q")).decode("utf-8", "replace")


def _value(f, kind: int):
    if kind in _SCALARS:
        return _read(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, count = _read(f, "<I"), _read(f, "<Q")
        if item in _SCALARS:  # skip numeric arrays without decoding them
            f.seek(struct.calcsize(_SCALARS[item]) * count, 1)
            return None
        for _ in range(count):
            _value(f, item)
        return None
    raise GGUFError(f"unknown GGUF value type {kind}")


def read_metadata(path: Path, wanted=None) -> dict:
    """Scalar and string metadata of a GGUF file (arrays skipped); stops early once ``wanted`` are read."""
    meta: dict = {}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path}: not a GGUF file")
        version = _read(f, "<I")
        if version < 2:
            raise GGUFError(f"{path}: GGUF version {version} is not supported")
        _read(f, "<Q")
        count = _read(f, "<Q")
        for _ in range(count):
            key = _string(f)
            meta[key] = _value(f, _read(f, "<I"))
            if wanted and wanted(meta):
                break
    return meta


def model_shape(path: Path, bytes_per_value: int = 2) -> ModelShape:
    """Attention shape of the model in ``path``; KV values are f16 (2 bytes) unless told."""
    def done(meta: dict) -> bool:
        arch = meta.get("general.architecture")
        return bool(arch) and all(
            f"{arch}.{k}" in meta for k in ("block_count", "attention.head_count_kv", "attention.head_count", "embedding_length"))

    try:
        meta = read_metadata(Path(path), done)
    except OSError as exc:
        raise GGUFError(f"{path}: {exc.strerror}") from None
    arch = meta.get("general.architecture")
    try:
        layers = int(meta[f"{arch}.block_count"])
        heads = int(meta[f"{arch}.attention.head_count"])
        kv_heads = int(meta.get(f"{arch}.attention.head_count_kv", heads))
        head_dim = int(meta.get(f"{arch}.attention.key_length") or int(meta[f"{arch}.embedding_length"]) // heads)
    except (KeyError, TypeError, ZeroDivisionError):
        raise GGUFError(f"{path}: attention shape not found in the GGUF header") from None
    return ModelShape(layers=layers, kv_heads=kv_heads, head_dim=head_dim, bytes_per_value=bytes_per_value,
                      source=Path(path).name)
