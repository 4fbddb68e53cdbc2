"""Where the harness finds its data, in one place.

Schemas, engine definitions and track plans ship inside the package (``harness/schemas``,
``harness/data/engines``, ``harness/data/tracks``), so an installed wheel or the harness image
finds them; the checkout's top-level ``schemas/``, ``engines/`` and ``tracks/`` are links to the
same folders. Each can be overridden by an environment variable (a private engine or plan folder).
Things that belong to a checkout rather than to the package (the compose files, the default model
folder) are looked up in the checkout when there is one, else in the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _override(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else default


def checkout() -> Path | None:
    """The source checkout this package runs from, or None for an installed wheel."""
    root = PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "compose").is_dir() else None


def workdir() -> Path:
    """The checkout when there is one, else the current directory."""
    return checkout() or Path.cwd()


def schemas_dir() -> Path:
    return _override("HARNESS_SCHEMAS", PACKAGE / "schemas")


def engines_dir() -> Path:
    return _override("HARNESS_ENGINES", PACKAGE / "data" / "engines")


def tracks_dir() -> Path:
    return _override("HARNESS_TRACKS", PACKAGE / "data" / "tracks")


def compose_dir() -> Path:
    return _override("HARNESS_COMPOSE", workdir() / "compose")


def models_dir() -> Path:
    """Where ``make llama-cpu`` assembles the small real model."""
    return _override("HARNESS_MODELS", workdir() / "models")


def data_file(name: str) -> Path:
    """One of the package's tables (``harness/data/machines.yaml``, ``models.yaml``, ``downloads.yaml``)."""
    return PACKAGE / "data" / name
