"""scripts/check_rehearsal.py --real-mlx: CI's check that Track M's mlx-lm blocks ran on the real
mlx_lm.server on MLX's CPU backend (what tests/integration/mlx/test_mlx_cpu.py's rehearsal test
asserts, which CI then skips), and that an imitation or another build fails it."""

from __future__ import annotations

import importlib.util

from harness.engines import mlx_cpu
from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("check_rehearsal", ROOT / "scripts" / "check_rehearsal.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

REAL = f"mlx_lm.server itself ({mlx_cpu.LABEL}), Gemma 3 270M in float32"
BANNER = f"**REHEARSAL, not a Mac**\n\n| mlx-lm | {REAL} |\n\n## Headline\n"


def speed(**changes) -> dict:
    record = {
        "engine": "mlx-lm",
        "test": "short",
        "decode_tokens_per_s": 7.6,
        "engine_version": f"mlx-lm {mlx_cpu.MLX_LM_VERSION} / mlx {mlx_cpu.MLX_VERSION}",
        "backend": "CPU",
        "process_resident_mb": 1872,
        "stand_in": REAL,
    }
    return {**record, **changes}


def test_the_real_server_passes() -> None:
    assert check.real_mlx_problems([speed(), speed(test="long")], BANNER) == []


def test_the_imitation_fails_on_its_records_and_its_banner() -> None:
    imitated = "the practice server imitating mlx_lm.server"
    found = check.real_mlx_problems(
        [speed(stand_in=imitated, process_resident_mb=60)], f"| mlx-lm | {imitated} |\n## x"
    )
    assert found == [
        f"an mlx-lm engine-speed record names the stand-in {imitated!r}",
        "an mlx-lm engine-speed record holds 60 MB, not the weights",
        "the report's banner does not name the real mlx_lm.server as the stand-in",
    ]


def test_another_version_or_backend_and_no_record_at_all_fail() -> None:
    found = check.real_mlx_problems([speed(engine_version="mlx-lm 0.31.0 / mlx 0.31.0")], BANNER)
    assert found == ["an mlx-lm engine-speed record says 'mlx-lm 0.31.0 / mlx 0.31.0' on 'CPU'"]
    assert check.real_mlx_problems([], BANNER) == ["no engine-speed record of mlx-lm"]
