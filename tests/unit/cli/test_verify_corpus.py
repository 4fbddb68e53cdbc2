"""``harness verify-allocation --observe-only`` on real load logs from the corpus (tests/corpus): the
pool of a unified llama-server cache, a vLLM V0 log that counts blocks, a TensorRT-LLM log held to
the lab's cap, and a start-up that failed, each said in one line."""

from __future__ import annotations

from harness.cli import main
from tests.corpus_samples import CORPUS

UNIFIED = CORPUS / "llama" / "llama-gh17086-rocm-mi50-vega7-unified-4of1-128k.log"
BLOCKS_ONLY = CORPUS / "vllm" / "vllm-v0-2024-02-opt-125m-weights-mb-oldest.log"
BLOCKS_AND_CONCURRENCY = CORPUS / "vllm" / "vllm-early-v1-2025-01-gpu-blocks-only-70b-w8a8.log"
TRTLLM = CORPUS / "trtllm" / "trtllm-0.19.0-trtllm-serve-rtx5090-fp8-engine.log"
TOO_LONG = CORPUS / "vllm" / "vllm-v0-2025-04-rtx3090-gpustack-max-seq-len-traceback.log"


def observe(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify-allocation", "--observe-only", *args])
    return code, capsys.readouterr().out


def test_a_unified_cache_holds_its_cells_once_not_once_per_sequence(capsys):
    code, out = observe(capsys, "--log", str(UNIFIED))  # "128000 cells, 62 layers, 4/1 seqs"
    assert code == 0
    assert "holds 128,000 tokens of KV" in out


def test_a_v0_log_in_blocks_is_read_with_the_block_size_it_implies_or_the_one_assumed(capsys):
    code, out = observe(capsys, "--log", str(BLOCKS_AND_CONCURRENCY))  # 1,381 blocks, 10.79x at 2,048
    assert code == 0 and "holds 22,096 tokens of KV;" in out
    code, out = observe(capsys, "--log", str(BLOCKS_ONLY), "--block-size", "32")
    assert code == 0
    assert "holds 2,439,680 tokens of KV (76,240 blocks x 32 tokens, the --block-size assumed" in out


def test_a_trtllm_log_is_read_and_held_to_the_cap(capsys):
    code, out = observe(capsys, "--log", str(TRTLLM))
    assert code == 0 and "holds 263,008 tokens of KV" in out
    assert main(["verify-allocation", "--log", str(TRTLLM), "--kv-max-tokens", "131072"]) == 1
    assert "over the kv_cache_config.max_tokens cap of 131,072" in capsys.readouterr().out
    assert main(["verify-allocation", "--log", str(TRTLLM), "--kv-max-tokens", "300000"]) == 0
    assert "the free-memory fraction decided it, not max_tokens" in capsys.readouterr().out


def test_a_failed_start_is_named_in_one_line(capsys):
    code, out = observe(capsys, "--log", str(TOO_LONG))
    assert code == 1
    assert (
        "MISMATCH: this vLLM start-up failed before allocating: the model's max seq len (8,192) is larger "
        in out
    )


def test_the_imitated_trtllm_states_the_labs_cap_and_verify_allocation_confirms_it(tmp_path, capsys):
    # Track S's TensorRT-LLM block in a rehearsal: the options file caps the pool at 8,192 tokens
    from harness.practice.imitation import read_command

    options = tmp_path / "trtllm-lab.yml"
    options.write_text("guided_decoding_backend: xgrammar\nkv_cache_config:\n  max_tokens: 8192\n")
    argv = ["trtllm-serve", "/models/Qwen3-8B", "--port", "8082", "--extra_llm_api_options", str(options)]
    log = tmp_path / "trtllm.out"
    log.write_text("\n".join(read_command(argv).start_lines()) + "\n")
    notebook = tmp_path / "labbook.md"
    code = main(
        ["verify-allocation", "--log", str(log), "--kv-max-tokens", "8192", "--labbook", str(notebook)]
    )
    assert code == 0, capsys.readouterr().out
    assert "holds 8,192 tokens of KV" in capsys.readouterr().out
    assert '"verdict": "match"' in notebook.read_text()
