"""An engine's own API key (TabbyAPI's ``api_tokens.yml``), read for the steps' environment: the
steps take it through ``--api-key-env``; it is never printed, recorded or put on a command line."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.errors import EngineError
from harness.engines.command_line import fill
from harness.run.plans import Block


def api_key_env(block: Block, settings: dict) -> dict[str, str]:
    """``{ENV_NAME: key}`` for an engine with an ``api_key_file``, else ``{}``."""
    spec = block.engine.get("api_key_file")
    if not spec:
        return {}
    path = Path(fill(spec, settings))
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        raise EngineError(
            f"cannot read the API key file {path}; it is written on the engine's first start"
        ) from None
    key = data.get("api_key")
    key = key[0] if isinstance(key, list) and key else key
    if not isinstance(key, str) or not key:
        raise EngineError(f"{path} holds no api_key")
    return {block.engine.get("api_key_env", "LOADTEST_API_KEY"): key}
