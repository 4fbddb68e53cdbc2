"""Practice-server profiles: YAML files validated by ``schemas/practice-profile.schema.json``."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError, SchemaError
from harness.records.notebook import problems

PROFILE_DIR = Path(__file__).parent / "profiles"
DEFAULT_PROFILE = "kit"

_DEFAULTS: dict[str, Any] = {
    "check_model": True,
    "cache_type": "f16",
    "prefix_cache": "per-seat",
    "block_size": 16,
    "output": {"length": {"kind": "fixed", "tokens": 256}, "thinking_tokens": 0},
    "features": {"tool_parser": True, "json_schema": True},
    "faults": {
        "error_500_share": 0.0,
        "queue_limit": None,
        "cut_share": 0.0,
        "cut_after_tokens": 5,
        "stall_share": 0.0,
        "stall_s": 30.0,
        "malformed_share": 0.0,
        "no_usage_share": 0.0,
    },
    "seed": 1234,
}

_TIMING_DEFAULTS = {
    "batched": {
        "step_base_s": 0.02,
        "step_per_seq_s": 0.001,
        "prefill_tokens_per_s": 2000.0,
        "prefill_chunk": 512,
    },
    "fixed": {"ttft_s": 0.05, "itl_s": 0.01},
}


@dataclass
class Profile:
    """A validated profile with every default filled in (``raw`` keeps the merged dict)."""

    raw: dict
    source: str = ""
    name: str = field(init=False)
    mode: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.raw["name"]
        self.mode = self.raw["mode"]

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    @property
    def timing(self) -> dict:
        return self.raw["timing"]

    @property
    def faults(self) -> dict:
        return self.raw["faults"]

    @property
    def model_ids(self) -> list[str]:
        model = self.raw["model"]
        return [model["id"], *model.get("aliases", [])]


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def available() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def load_profile(name_or_path: str = DEFAULT_PROFILE, overrides: dict | None = None) -> Profile:
    """Load a shipped profile by name, or a YAML file by path, then apply ``overrides``."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"practice profile {name_or_path!r} not found; use one of {', '.join(available())} or a YAML "
            f"file path"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc}); fix the file and retry") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a profile must be a YAML mapping")
    found = problems(data, "practice-profile")
    if found:
        raise SchemaError(f"{path}: practice-profile invalid at {found[0]}")
    merged = _merge(_DEFAULTS, data)
    merged["timing"] = _merge(_TIMING_DEFAULTS[data["timing"]["kind"]], data["timing"])
    if overrides:
        merged = _merge(merged, overrides)
        found = problems(merged, "practice-profile")
        if found:
            raise ConfigError(f"override makes the profile invalid at {found[0]}")
    if merged["prefix_cache"] == "pooled" and "pool_tokens" not in merged:
        merged["pool_tokens"] = merged["seats"] * merged["ctx_per_seat"]
    return Profile(merged, source=str(path))
