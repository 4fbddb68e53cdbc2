"""``harness verify-allocation``'s check below the command line (harness.engines.allocation.verify),
on real load logs from tests/corpus: the verdict, its lines and its record come back together, and
options that cannot apply to a log are refused in one line before it is compared."""

from __future__ import annotations

import pytest

from harness.cli import build_parser
from harness.engines import allocation
from harness.errors import ConfigError
from tests.corpus_samples import CORPUS

TRTLLM = CORPUS / "trtllm" / "trtllm-0.19.0-trtllm-serve-rtx5090-fp8-engine.log"
UNIFIED = CORPUS / "llama" / "llama-gh17086-rocm-mi50-vega7-unified-4of1-128k.log"


def verify(*argv: str) -> allocation.Checked:
    return allocation.verify(build_parser().parse_args(["verify-allocation", *argv]))


def test_a_trtllm_log_over_its_cap_is_a_mismatch_with_its_record():
    checked = verify("--log", str(TRTLLM), "--kv-max-tokens", "131072")
    assert checked.problems and checked.record["verdict"] == "mismatch"
    assert any("over the kv_cache_config.max_tokens cap of 131,072" in line for line in checked.lines)


def test_an_observed_llama_log_holds_its_cells_once():
    checked = verify("--log", str(UNIFIED), "--observe-only")
    assert checked.problems == [] and checked.record["verdict"] == "observed"
    assert any("holds 128,000 tokens of KV" in line for line in checked.lines)


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], "pass --log FILE (or --equal-pool LOG_A LOG_B)"),
        (["--log", str(TRTLLM), "--expect-offload"], "is a trtllm log: --expect-offload"),
        (["--log", str(TRTLLM), "--engine", "vllm"], "looks like a trtllm log, not vllm"),
    ],
)
def test_what_cannot_apply_is_refused_before_anything_is_compared(argv, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        verify(*argv)
