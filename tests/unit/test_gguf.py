"""The KV-cache shape from a GGUF header: a header written here by the GGUF spec, and the real model."""

from __future__ import annotations

import struct

import pytest

from voicetrace import components
from voicetrace.traces.gguf import GGUFError, model_shape


def _s(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _kv(key: str, kind: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", kind) + payload


def _header(metadata: list[bytes], version: int = 3) -> bytes:
    """GGUF: magic, u32 version, u64 tensor count, u64 metadata count, then the key/value pairs."""
    return b"GGUF" + struct.pack("<IQQ", version, 0, len(metadata)) + b"".join(metadata)


U32, F32, STRING, ARRAY, U64 = 4, 6, 8, 9, 10


def test_a_header_by_the_spec_gives_its_shape(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(_header([
        _kv("general.architecture", STRING, _s("llama")),
        _kv("general.name", STRING, _s("test model")),
        # arrays before the shape keys must be skipped whole: strings one by one, numbers in one seek
        _kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 3) + _s("a") + _s("bb") + _s("ccc")),
        _kv("tokenizer.ggml.scores", ARRAY, struct.pack("<IQ", F32, 4) + struct.pack("<4f", 0, 1, 2, 3)),
        _kv("llama.block_count", U32, struct.pack("<I", 30)),
        _kv("llama.embedding_length", U64, struct.pack("<Q", 576)),
        _kv("llama.attention.head_count", U32, struct.pack("<I", 9)),
        _kv("llama.attention.head_count_kv", U32, struct.pack("<I", 3)),
    ]))
    shape = model_shape(path)
    # head size = 576 / 9 = 64; bytes per token = 2 (K and V) × 30 × 3 × 64 × 2 bytes
    assert (shape.layers, shape.kv_heads, shape.head_dim, shape.bytes_per_value) == (30, 3, 64, 2)
    assert shape.bytes_per_token == 2 * 30 * 3 * 64 * 2


def test_a_header_without_the_shape_is_one_clear_error(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(_header([_kv("general.architecture", STRING, _s("llama"))]))
    with pytest.raises(GGUFError, match="attention shape not found"):
        model_shape(path)
    path.write_bytes(b"GGUF" + struct.pack("<I", 3))
    with pytest.raises(GGUFError, match="truncated"):
        model_shape(path)


@pytest.mark.skipif(components.smollm2_gguf() is None, reason="the embedded model is installed by make install")
def test_the_embedded_models_real_header():
    """SmolLM2-135M's published config: 30 layers, 9 heads (3 KV heads), hidden size 576 → head size 64."""
    shape = model_shape(components.smollm2_gguf())
    assert (shape.layers, shape.kv_heads, shape.head_dim) == (30, 3, 64)
