"""Engine versions the lab records by hand where the engine has no version command of its own:
TensorRT-LLM's ``/version`` reply (documented, its fields not: recorded whole), and TabbyAPI's
commit with the ExLlamaV3 version of its virtual environment. Runnable as a version command:

    python -m harness.engines.versions trtllm http://127.0.0.1:8082
    python -m harness.engines.versions tabbyapi ~/tabbyAPI
    python -m harness.engines.versions mlx [PATH-TO-mlx_lm.server]

mlx_lm.server's version is read as the lab reads it: from the interpreter named on the first line
of the ``mlx_lm.server`` script, whose packages are the ones the server runs (another ``python3``
on the PATH may hold another mlx-lm, or none).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from harness.bounds import Bounds
from harness.errors import ConfigError, TargetError
from harness.endpoints.http_client import Reply, auth_headers, request

Runner = Callable[[list[str]], "str | None"]


def _run(cmd: list[str]) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def trtllm_text(body: str) -> str:
    """The ``/version`` reply as one line: compact JSON when it is JSON, else the text itself."""
    try:
        return json.dumps(json.loads(body), separators=(",", ":"), sort_keys=True)
    except json.JSONDecodeError:
        return " ".join(body.split())


def server_version(
    base_url: str, api_key: str | None = None, get: Callable[[str], Reply] | None = None
) -> str | None:
    """The server's ``GET /version`` reply as one line (trtllm-serve documents it without documenting
    its fields, vLLM answers it too); None when the server has no such route or does not answer."""
    root = base_url.rstrip("/").removesuffix("/v1")
    fetch = get or (lambda url: request("GET", url, Bounds.of(10.0), headers=auth_headers(api_key)))
    try:
        reply = fetch(root + "/version")
    except TargetError:
        return None
    return trtllm_text(reply.text)[:2000] if reply.status == 200 and reply.body.strip() else None


def trtllm_version(base_url: str, get: Callable[[str], Reply] | None = None) -> str:
    """What ``curl <server>/version`` prints, for the engine-version field."""
    text = server_version(base_url, get=get)
    if text is None:
        raise ConfigError(f"{base_url.removesuffix('/v1')}/version did not answer 200; is trtllm-serve up?")
    return "tensorrt-llm " + text


def tabby_version(tabby_dir: str | Path, run: Runner | None = None) -> str:
    """``tabbyAPI <short commit>, exllamav3 <version>``, as the lab's EXL3_VERSION line builds it; a part
    neither command answers reads ``unknown (<why>)``, never a guess."""
    run = run or _run
    tabby = Path(tabby_dir).expanduser()
    commit = run(["git", "-C", str(tabby), "rev-parse", "--short", "HEAD"])
    exl = run(
        [
            str(tabby / "venv" / "bin" / "python"),
            "-c",
            "from exllamav3.version import __version__; print(__version__)",
        ]
    )
    return (
        f"tabbyAPI {commit or 'unknown (no git checkout at ' + str(tabby) + ')'}, "
        f"exllamav3 {exl or 'unknown (not importable from ' + str(tabby / 'venv') + ')'}"
    )


MLX_IMPORT = 'import mlx_lm, mlx.core as mx; print("mlx-lm", mlx_lm.__version__, "/ mlx", mx.__version__)'


def shebang_interpreter(first_line: str) -> list[str] | None:
    """The interpreter a script's first line names (``#!/path/python3`` or ``#!/usr/bin/env python3``),
    as an argv; None when the line is no shebang."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].split()
    return words or None


def mlx_version(
    which: Callable[[str], str | None] = shutil.which,
    run: Runner | None = None,
    server: str = "mlx_lm.server",
) -> str:
    """``mlx-lm <version> / mlx <version>`` from the Python that runs ``server`` (the lab's MLX_PY,
    read from the script's first line; ``server`` is found on the PATH, or is a path); ConfigError
    when the script or that Python is missing."""
    run = run or _run
    script = which(server)
    if not script:
        raise ConfigError(f"{server} is not on the PATH; install mlx-lm as the MLX lesson describes")
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            first = f.readline().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read {script} ({exc.strerror}); reinstall mlx-lm") from None
    interpreter = shebang_interpreter(first)
    if interpreter is None:
        raise ConfigError(f"{script} does not start with #!: not the pip-installed mlx_lm.server script")
    text = run([*interpreter, "-c", MLX_IMPORT])
    if text is None:
        raise ConfigError(f"{' '.join(interpreter)} (from {script}'s first line) cannot import mlx_lm")
    return text


def main(argv: list[str]) -> int:
    if not ((len(argv) == 2 and argv[0] in ("trtllm", "tabbyapi")) or argv[:1] == ["mlx"] and len(argv) <= 2):
        print(
            "usage: python -m harness.engines.versions trtllm BASE_URL | tabbyapi TABBY_DIR | mlx [SERVER]",
            file=sys.stderr,
        )
        return 2
    try:
        if argv[0] == "mlx":
            print(mlx_version(server=argv[1] if len(argv) == 2 else "mlx_lm.server"))
        else:
            print(trtllm_version(argv[1]) if argv[0] == "trtllm" else tabby_version(argv[1]))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
