"""What the arithmetic needs to know about a model, read from the model itself where possible:
a GGUF file (metadata and tensor table), a Hugging Face directory (config.json and safetensors
headers), or the model table (``harness/data/models.yaml``) for formats not downloaded."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.records.notebook import validate

TABLE = paths.data_file("models.yaml")
# Architectures whose sliding-window layers follow a fixed pattern (one global layer in every N),
# as llama.cpp sets them; GGUF files do not carry the pattern.
SWA_PATTERN = {"gemma3": 6, "gemma2": 2, "cohere2": 4}


@dataclass
class ModelInfo:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    swa_layers: int = 0
    swa_window: int = 0
    formats: dict = field(default_factory=dict)  # name -> {tensor_bytes, embedding_bytes}
    source: str = ""


def from_table(key: str, path: Path = TABLE) -> ModelInfo:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "models", where=str(path))
    if key not in data["models"]:
        raise ConfigError(
            f"model {key!r} is not in {path}; use one of {', '.join(data['models'])}, a .gguf file or "
            "a Hugging Face directory"
        )
    m = data["models"][key]
    return ModelInfo(
        m["name"],
        m["layers"],
        m["kv_heads"],
        m["head_dim"],
        m.get("swa_layers", 0),
        m.get("swa_window", 0),
        m["formats"],
        source=f"{path}:{key}",
    )


def _file_type(value) -> str:
    """llama.cpp's name for a GGUF's general.file_type (15 -> Q4_K_M); '' when absent or unknown."""
    import gguf

    try:
        return gguf.LlamaFileType(int(value)).name.removeprefix("MOSTLY_")
    except (TypeError, ValueError):
        return ""


def from_gguf(path: Path) -> ModelInfo:
    from harness.engines.models.gguf_header import read_header

    try:
        reader = read_header(path)
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise ConfigError(
            f"{path} is not a readable GGUF file ({type(exc).__name__}); pass a .gguf file, a Hugging "
            "Face directory or a model-table name"
        ) from exc

    def field_value(key: str, default=None):
        return reader.fields.get(key, default)

    arch = field_value("general.architecture")
    if not arch:
        raise ConfigError(f"{path} has no general.architecture; is it a model GGUF?")
    layers = int(field_value(f"{arch}.block_count"))
    heads = int(field_value(f"{arch}.attention.head_count"))
    kv_heads = int(field_value(f"{arch}.attention.head_count_kv", heads))
    embd = int(field_value(f"{arch}.embedding_length"))
    head_dim = int(field_value(f"{arch}.attention.key_length", embd // heads))
    window = int(field_value(f"{arch}.attention.sliding_window", 0) or 0)
    swa_layers = layers - layers // SWA_PATTERN[arch] if window and arch in SWA_PATTERN else 0
    total = sum(int(t.n_bytes) for t in reader.tensors)
    embedding = sum(int(t.n_bytes) for t in reader.tensors if t.name == "token_embd.weight")
    name = field_value("general.name", path.stem)
    fmt = f"GGUF {_file_type(field_value('general.file_type'))}".rstrip()  # "GGUF Q4_K_M", as the model table
    return ModelInfo(
        str(name),
        layers,
        kv_heads,
        head_dim,
        swa_layers,
        window if swa_layers else 0,
        {fmt: {"tensor_bytes": total, "embedding_bytes": embedding}},
        source=str(path),
    )


_DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


def _hf_sliding(cfg: dict, layers: int) -> tuple[int, int]:
    """(sliding-window layers, window) from config.json: its ``layer_types`` list where it has one
    (Gemma 3 in recent transformers), else the model type's fixed pattern; (0, 0) without a window."""
    window = int(cfg.get("sliding_window") or 0)
    if not window:
        return 0, 0
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and len(kinds) == layers:
        swa = sum(1 for k in kinds if k == "sliding_attention")
        return swa, window if swa else 0
    pattern = cfg.get("sliding_window_pattern") or cfg.get("_sliding_window_pattern")
    pattern = pattern or SWA_PATTERN.get(str(cfg.get("model_type", "")).removesuffix("_text"))
    if not pattern:
        return 0, 0
    return layers - layers // int(pattern), window


def from_hf_dir(path: Path) -> ModelInfo:
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise ConfigError(f"{path} has no config.json; pass a Hugging Face model directory or a .gguf file")
    cfg = json.loads(cfg_path.read_text())
    cfg = cfg.get("text_config", cfg)
    layers, heads = int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads", heads))
    head_dim = int(cfg.get("head_dim") or cfg["hidden_size"] // heads)
    swa_layers, window = _hf_sliding(cfg, layers)
    total = embedding = 0
    for shard in sorted(path.glob("*.safetensors")):
        with open(shard, "rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            start, end = meta["data_offsets"]
            total += end - start
            if name.endswith("embed_tokens.weight"):
                embedding += end - start
    if total == 0:
        raise ConfigError(f"{path} has no .safetensors files to read tensor bytes from")
    return ModelInfo(
        cfg.get("_name_or_path", path.name),
        layers,
        kv_heads,
        head_dim,
        swa_layers,
        window,
        formats={"safetensors": {"tensor_bytes": total, "embedding_bytes": embedding}},
        source=str(path),
    )


def load_model(spec: str) -> ModelInfo:
    """A GGUF file, a Hugging Face directory, or a model-table name."""
    path = Path(spec)
    if path.is_dir():
        return from_hf_dir(path)
    if path.is_file():
        return from_gguf(path)
    return from_table(spec)
