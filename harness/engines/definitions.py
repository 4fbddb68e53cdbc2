"""The engine table (``data/engines/*.yaml``, docs/architecture.md, "Contracts"): an engine
definition read by name or path and checked against ``schemas/engine.schema.json``. What the
definition means for a command line is ``harness.engines.command_line``'s; the report reads the
definitions here too (an engine's log lines), so they sit below both."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.records.notebook import validate

ENGINE_DIR = paths.engines_dir()


@dataclass(frozen=True)
class Engine:
    name: str
    spec: dict

    def __getitem__(self, key):
        return self.spec[key]

    def get(self, key, default=None):
        return self.spec.get(key, default)


def available() -> list[str]:
    return sorted(p.stem for p in ENGINE_DIR.glob("*.yaml"))


@lru_cache(maxsize=None)
def load_engine(name: str) -> Engine:
    """An engine by name (``engines/<name>.yaml``) or by path, validated against its schema."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else ENGINE_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"no engine definition {name!r}; known engines: {', '.join(available())}")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc.__class__.__name__}); fix the file") from None
    validate(spec, "engine", where=str(path))
    return Engine(spec["name"], spec)
