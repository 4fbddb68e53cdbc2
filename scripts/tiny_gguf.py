"""Write a tiny Gemma 3 GGUF with random weights: a model small enough to travel with the GPU check
(scripts/gpu-check.sh) that llama-server still loads, offloads and answers with (garbage text).

The tokenizer is copied from a real Gemma 3 GGUF (the project's Gemma 3 270M, from `make llama-cpu`),
so prompts tokenise as they do for the real model; everything else is written here: a gemma3
architecture with 6 layers (Gemma 3's pattern: five sliding-window layers, then one global one, so
llama-server logs both of its KV caches as it does for the real model, and verify-allocation's
prediction holds), embedding 64, 2 query heads and 1 KV head of 64 dimensions, a 128-wide
feed-forward, the embedding table in Q8_0 (262,144 tokens x 64) and the rest in F16/F32. About 25 MB.
The weights come from a seeded generator, so the same arguments write the same file.

Usage: python scripts/tiny_gguf.py OUT.gguf [--tokenizer-from models/gemma-3-270m-q4_k_m.gguf]
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

import gguf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.engines.models.gguf_header import ARRAY, SCALARS, STRING  # noqa: E402

ARCH = "gemma3"
DEFAULT_TOKENIZER = Path("models/gemma-3-270m-q4_k_m.gguf")
# The model's shape: small, but with a head size llama.cpp's CUDA flash-attention kernels support.
N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF = 6, 64, 2, 1, 64, 128
CONTEXT = 8192
SLIDING_WINDOW = 512


# numpy's dtype of each numeric array element type, by the same ids as gguf_header.SCALARS
_NUMPY = {
    0: "<u1",
    1: "<i1",
    2: "<u2",
    3: "<i2",
    4: "<u4",
    5: "<i4",
    6: "<f4",
    7: "?",
    10: "<u8",
    11: "<i8",
    12: "<f8",
}


def read_metadata(path: Path) -> dict[str, tuple[int, int | None, object]]:
    """Every metadata field of a GGUF file: key -> (type, element type of an array, value), strings
    as their bytes. ``gguf.GGUFReader`` makes a memory-map view of each of a 262,144-entry
    vocabulary's parts (21 s of this script's 25 on a slow core); this reads the bytes once."""
    data = path.read_bytes()
    if data[:4] != b"GGUF":
        raise SystemExit(f"error: {path} is not a GGUF file")
    _, _, count = struct.unpack_from("<IQQ", data, 4)
    at = 24

    def string() -> bytes:
        nonlocal at
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8 + n
        return data[at - n : at]

    def value(kind: int):
        nonlocal at
        if kind == STRING:
            return string()
        fmt = SCALARS[kind]
        (v,) = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return v

    fields: dict[str, tuple[int, int | None, object]] = {}
    for _ in range(count):
        key = string().decode("utf-8")
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        if kind != ARRAY:
            fields[key] = (kind, None, value(kind))
            continue
        sub, n = struct.unpack_from("<IQ", data, at)
        at += 12
        if sub == STRING:
            fields[key] = (kind, sub, [string() for _ in range(n)])
        else:
            items = np.frombuffer(data, dtype=_NUMPY[sub], count=n, offset=at)
            at += items.nbytes
            fields[key] = (kind, sub, items.tolist())
    return fields


def copy_tokenizer(fields: dict, writer: gguf.GGUFWriter) -> int:
    """Every tokenizer.* field of the source, typed as it was; returns the vocabulary size."""
    vocab = 0
    for key, (kind, sub, value) in fields.items():
        if not key.startswith("tokenizer."):
            continue
        if sub is not None:
            writer.add_key_value(key, value, gguf.GGUFValueType(kind), sub_type=gguf.GGUFValueType(sub))
            if key == "tokenizer.ggml.tokens":
                vocab = len(value)
        else:
            writer.add_key_value(key, value, gguf.GGUFValueType(kind))
    return vocab


def write(out: Path, tokenizer_from: Path, seed: int = 0) -> int:
    """Write the model to ``out``; returns its size in bytes."""
    source = read_metadata(tokenizer_from)
    arch = source.get("general.architecture")
    if arch is None or arch[2] != ARCH.encode():
        raise SystemExit(
            f"error: {tokenizer_from} is not a Gemma 3 GGUF; pass the project's Gemma 3 270M "
            "(make llama-cpu writes models/gemma-3-270m-q4_k_m.gguf)"
        )
    writer = gguf.GGUFWriter(str(out), ARCH)
    writer.add_name("tiny random Gemma 3 (GPU check, weights random)")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_sliding_window(SLIDING_WINDOW)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    vocab = copy_tokenizer(source, writer)
    if not vocab:
        raise SystemExit(f"error: {tokenizer_from} has no tokenizer.ggml.tokens; pass a GGUF with one")

    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int) -> np.ndarray:  # numpy (rows, cols) is GGUF shape [cols, rows]
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    embd = (rng.standard_normal((vocab, N_EMBD)) * 0.02).astype(np.float32)
    q8 = gguf.quants.quantize(embd, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", norm(N_EMBD))
    for i in range(N_LAYER):
        b = f"blk.{i}"
        writer.add_tensor(f"{b}.attn_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{b}.attn_q.weight", matrix(N_HEAD * HEAD_DIM, N_EMBD))
        writer.add_tensor(f"{b}.attn_k.weight", matrix(N_HEAD_KV * HEAD_DIM, N_EMBD))
        writer.add_tensor(f"{b}.attn_v.weight", matrix(N_HEAD_KV * HEAD_DIM, N_EMBD))
        writer.add_tensor(f"{b}.attn_q_norm.weight", norm(HEAD_DIM))
        writer.add_tensor(f"{b}.attn_k_norm.weight", norm(HEAD_DIM))
        writer.add_tensor(f"{b}.attn_output.weight", matrix(N_EMBD, N_HEAD * HEAD_DIM))
        writer.add_tensor(f"{b}.post_attention_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{b}.ffn_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{b}.ffn_gate.weight", matrix(N_FF, N_EMBD))
        writer.add_tensor(f"{b}.ffn_up.weight", matrix(N_FF, N_EMBD))
        writer.add_tensor(f"{b}.ffn_down.weight", matrix(N_EMBD, N_FF))
        writer.add_tensor(f"{b}.post_ffw_norm.weight", norm(N_EMBD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the GGUF file to write")
    p.add_argument(
        "--tokenizer-from",
        default=str(DEFAULT_TOKENIZER),
        help=f"a Gemma 3 GGUF whose tokenizer is copied (default: {DEFAULT_TOKENIZER}, from make llama-cpu)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (default: 0)")
    args = p.parse_args(argv)
    src = Path(args.tokenizer_from)
    if not src.is_file():
        print(
            f"error: {src} not found; run make llama-cpu (it installs the Gemma 3 270M GGUF) "
            "or pass --tokenizer-from FILE",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    size = write(out, src, args.seed)
    print(f"wrote {out} ({size:,} bytes): gemma3, {N_LAYER} layers, embedding {N_EMBD}, weights random")
    return 0


if __name__ == "__main__":
    sys.exit(main())
