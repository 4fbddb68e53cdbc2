"""Every track's dry run, byte for byte, against the output captured before the runner was split.

``harness track PLAN --dry-run`` is what a user reads before starting an hour-long run, and it is
the runner's own statement of what it executes, so a refactoring of ``harness/run`` must leave it
unchanged. Each plan (and each of its tiers) runs as a user would run it: the real CLI in a fresh
directory with the default run directory. What depends on the machine (the checkout, the
interpreter, the llama-server install, $HOME, today's date, the working directory) is replaced by
placeholders before comparing.

Regenerate the fixtures (only when a change to the dry run is intended) with
``.venv/bin/python -m tests.integration.test_dry_runs``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.engines.vllm_precision import PRECISION_KINDS

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "fixtures" / "expected" / "dry-run"

# (track, tier): None is the plan's default tier, as `harness track NAME --dry-run` gives it.
CASES = [
    ("cpu", None),
    ("s", None),
    ("x", None),
    ("n", None),
    ("n", "24gb"),
    ("n", "16gb"),
    ("m", None),
    ("m", "32gb"),
    ("m", "16gb"),
    ("day3", None),
    ("day3", "spark"),
]


# A GPU track rehearsed on CPU stand-ins (harness/data/rehearsals): the quick size, and N's 16 GB
# tier at the full size (its tier's values must survive the overlay where it does not swap them).
REHEARSALS = [
    ("s", None, True),
    ("x", None, True),
    ("n", None, True),
    ("n", "16gb", False),
    ("m", None, True),
    ("day3", None, True),
]


def case_name(track: str, tier: str | None, rehearse: bool | None = None) -> str:
    name = track + (f"-{tier}" if tier else "")
    return name if rehearse is None else f"{name}-rehearse" + ("-quick" if rehearse else "")


def _llama_bin_dir() -> str | None:
    """Where `make llama-cpu` put llama-server (its folder holds llama-batched-bench too)."""
    from harness.errors import InstallError
    from harness.engines import llama_cpu

    try:
        return str(llama_cpu.find_llama_server().parent)
    except InstallError:
        return None


def _vulkan_bin_dir() -> str | None:
    """Where `make llama-vulkan` put the Vulkan llama-server, if it did."""
    from harness.engines import llama_vulkan

    return None if llama_vulkan.install_status() else str(llama_vulkan.bin_dir())


def normalise(text: str, cwd: Path, rehearsal: bool = False) -> str:
    """Replace the machine's own paths and today's date by placeholders, longest first, so a path
    inside another (the llama-server inside the checkout's .venv) keeps its own name."""
    places = {
        "<LLAMA_BIN>": _llama_bin_dir(),
        "<LLAMA_VULKAN_BIN>": _vulkan_bin_dir(),
        "<PYTHON>": sys.executable,
        "<CWD>": str(cwd),
        "<ROOT>": str(ROOT),
        "<HOME>": os.environ.get("HOME"),
    }
    for name, value in sorted(places.items(), key=lambda kv: -len(kv[1] or "")):
        if value and value != "/":
            text = text.replace(value, name)
    # what a rehearsal's vLLM stand-in serves at depends on this CPU (vllm_precision.compute_dtype)
    precision = (
        []
        if not rehearsal
        else [(value, kind) for kind, by_dtype in PRECISION_KINDS.items() for value in by_dtype.values()]
    )
    for value, kind in sorted(precision, key=lambda vk: -len(vk[0])):
        text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", f"<{kind}>", text)
    return text.replace(f"runs/{time.strftime('%Y-%m-%d')}-", "runs/<DATE>-")


def dry_run(
    track: str, tier: str | None, cwd: Path, rehearse: bool | None = None, vulkan: bool = False
) -> str:
    """The dry run as a user sees it: the real CLI, in ``cwd``, default run directory; ``rehearse``
    True or False: a rehearsal, quick or full size. ``vulkan``: with the Vulkan build this machine
    has (Track X's control block runs it); without, as on a machine that has none."""
    argv = [
        sys.executable,
        "-m",
        "harness.cli.entry",
        "track",
        track,
        "--dry-run",
        *(["--tier", tier] if tier else []),
        *([] if rehearse is None else ["--rehearse", *(["--quick"] if rehearse else [])]),
    ]
    # the Compose CLI this machine has (v2's plugin, else v1) is spelled in the plan: fix it to v2's
    # Track M's rehearsal serves mlx_lm.server itself where make mlx-cpu has run, else its imitation:
    # the expected text is the imitation's, whatever this machine has (MLX_VENV names no folder)
    env = {**os.environ, "HARNESS_COMPOSE_CLI": "docker compose", "MLX_VENV": str(cwd / "no-mlx-venv")}
    if not vulkan:
        env["LLAMA_VULKAN_DIR"] = str(cwd / "no-vulkan-build")
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return normalise(done.stdout, cwd, rehearsal=rehearse is not None)


@pytest.mark.parametrize("track,tier", CASES, ids=[case_name(*c) for c in CASES])
def test_dry_run_is_unchanged(track: str, tier: str | None, tmp_path: Path) -> None:
    expected = (EXPECTED / f"{case_name(track, tier)}.txt").read_text(encoding="utf-8")
    assert dry_run(track, tier, tmp_path) == expected


@pytest.mark.parametrize("track,tier,quick", REHEARSALS, ids=[case_name(*c) for c in REHEARSALS])
def test_rehearsal_dry_run_is_unchanged(track: str, tier: str | None, quick: bool, tmp_path: Path) -> None:
    expected = (EXPECTED / f"{case_name(track, tier, quick)}.txt").read_text(encoding="utf-8")
    assert dry_run(track, tier, tmp_path, quick) == expected


def test_rehearsal_dry_run_with_the_vulkan_build(tmp_path: Path) -> None:
    """Track X's Vulkan control on the Vulkan build `make llama-vulkan` installed here."""
    if _vulkan_bin_dir() is None:
        pytest.skip("the Vulkan build is not installed here (make llama-vulkan)")
    expected = (EXPECTED / "x-rehearse-quick-vulkan.txt").read_text(encoding="utf-8")
    assert dry_run("x", None, tmp_path, True, vulkan=True) == expected


if __name__ == "__main__":
    import tempfile

    EXPECTED.mkdir(parents=True, exist_ok=True)
    for case in [*CASES, *REHEARSALS]:
        with tempfile.TemporaryDirectory() as tmp:
            text = dry_run(case[0], case[1], Path(tmp).resolve(), *case[2:])
        (EXPECTED / f"{case_name(*case)}.txt").write_text(text, encoding="utf-8")
        print(f"wrote {case_name(*case)}.txt ({len(text.splitlines())} lines)")
    if _vulkan_bin_dir() is not None:
        with tempfile.TemporaryDirectory() as tmp:
            text = dry_run("x", None, Path(tmp).resolve(), True, vulkan=True)
        (EXPECTED / "x-rehearse-quick-vulkan.txt").write_text(text, encoding="utf-8")
        print(f"wrote x-rehearse-quick-vulkan.txt ({len(text.splitlines())} lines)")
    else:
        print("x-rehearse-quick-vulkan.txt left as it is: the Vulkan build is not installed here")
