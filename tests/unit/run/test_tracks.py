"""Engines and track plans as data: every definition validates, and each GPU track's dry run
starts every engine exactly as the lab pages' serve scripts do with that track's lab.env values,
flag for flag. The expected command lines below are facts read from those scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engines import definitions as engine_table
from harness.engines import command_line as engine_defs
from harness.errors import ConfigError
from harness.run.plans import load_plan
from harness.run.context import block_context
from harness.run.launcher_table import make_launcher
from harness.run.steps import step_calls

HOME = "/home/you"
GGUF = f"{HOME}/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf"
BIN = f"{HOME}/llama.cpp/build/bin"
LOG = "<log>"


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch):
    monkeypatch.setenv("HOME", HOME)


def started(track: str, tier: str | None = None, tmp: Path = Path("/tmp/dry")) -> dict[str, list[str]]:
    """Block id -> the argv its launcher would execute (the engine's own log path replaced by <log>)."""
    plan = load_plan(track, tier)
    out = {}
    for block_id, block in plan.blocks.items():
        ctx = block_context(plan, block, tmp, dry_run=True)
        if block.engine["launcher"] == "compose":
            # What the container runs: its image and command, read from compose.yaml with the variables.
            spec = make_launcher(ctx).service_spec()
            argv = [spec["image"], *spec["command"]]
        else:
            argv = engine_defs.launch_argv(block.engine, ctx.settings)
        out[block_id] = [LOG if a == ctx.settings["log"] else a for a in argv]
    return out


def from_image(argv: list[str]) -> list[str]:
    """A ``docker run`` line from its image on: what a compose profile runs the same way."""
    return argv[next(i for i, a in enumerate(argv) if a.startswith("nvcr.io/")) :]


def llama_parallel(slots: int, ctx: int, cache: str) -> list[str]:
    return [
        f"{BIN}/llama-server",
        "--model",
        GGUF,
        "--alias",
        "local-chat",
        "--host",
        "127.0.0.1",
        "--port",
        "8080",
        "--ctx-size",
        str(slots * ctx),
        "--parallel",
        str(slots),
        "--cont-batching",
        "--n-gpu-layers",
        "999",
        "--flash-attn",
        "on",
        "--cache-type-k",
        cache,
        "--cache-type-v",
        cache,
        "--cache-ram",
        "0",
        "--metrics",
        "--jinja",
        "--verbosity",
        "4",
        "--log-file",
        LOG,
    ]


def vllm_flags(
    model: str, seqs: int, memory: tuple[str, str], dtype: str, native: bool, host: str
) -> list[str]:
    flags = [
        "serve",
        model,
        "--host",
        host,
        "--port",
        "8000",
        "--served-model-name",
        "local-chat",
        "--max-model-len",
        "4096",
        "--max-num-seqs",
        str(seqs),
        *memory,
        "--kv-cache-dtype",
        dtype,
        "--enable-prefix-caching",
    ]
    return flags + (["--tensor-parallel-size", "1"] if native else []) + ["--enable-prompt-tokens-details"]


def vllm_container(seqs: int, memory: tuple[str, str]) -> list[str]:
    return [
        "docker",
        "run",
        "--rm",
        "--name",
        "vllm-lab",
        "--gpus",
        "all",
        "--ipc=host",
        "-v",
        f"{HOME}/models:/models:ro",
        "-p",
        "127.0.0.1:8000:8000",
        "nvcr.io/nvidia/vllm:26.08-py3",
        "vllm",
        *vllm_flags("/models/Qwen/Qwen3-8B-AWQ", seqs, memory, "auto", native=False, host="0.0.0.0"),
    ]


def control(llama_bin: str = BIN) -> list[str]:
    return [
        f"{llama_bin}/llama-server",
        "--model",
        GGUF,
        "--alias",
        "Qwen3-8B-Q4_K_M",
        "--host",
        "127.0.0.1",
        "--port",
        "8080",
        "--ctx-size",
        "8192",
        "--n-gpu-layers",
        "999",
        "--flash-attn",
        "on",
        "--parallel",
        "1",
        "--jinja",
        "--cache-ram",
        "0",
        "--verbosity",
        "4",
        "--log-file",
        LOG,
    ]


def llama_blocks(slots: int, cache: str, alt: str) -> dict[str, list[str]]:
    return {
        "llama": llama_parallel(slots, 4096, cache),
        "llama-slots8": llama_parallel(8, 4096, cache),
        "llama-ctx2048": llama_parallel(slots, 2048, cache),
        "llama-kv-alt": llama_parallel(slots, 4096, alt),
    }


def test_every_engine_and_plan_validates():
    assert {
        "llama-server",
        "llama-server-control",
        "llama-server-cpu",
        "vllm",
        "vllm-container",
        "vllm-control",
        "trtllm",
        "mlx-lm",
        "lemonade",
        "tabbyapi",
        "practice",
    } <= set(engine_table.available())
    for name in engine_table.available():
        engine_table.load_engine(name)
    for track, tiers in (
        ("cpu", [None]),
        ("s", [None]),
        ("n", ["24gb", "16gb"]),
        ("x", [None]),
        ("m", ["32gb", "16gb"]),
    ):
        for tier in tiers:
            assert load_plan(track, tier).steps


def test_track_s_starts_every_engine_as_the_serve_scripts_do(tmp_path):
    got = started("s", tmp=tmp_path)
    kv = ("--kv-cache-memory-bytes", "12079595520")
    assert {k: got[k] for k in ("llama", "llama-slots8", "llama-ctx2048", "llama-kv-alt")} == llama_blocks(
        20, "f16", "q8_0"
    )
    # vLLM and TensorRT-LLM start through their compose profiles: the labs' docker run image and command.
    assert got["vllm"] == from_image(vllm_container(20, kv))
    assert got["vllm-seqs8"] == from_image(vllm_container(8, kv))
    assert got["vllm-mem-a"] == from_image(vllm_container(20, ("--gpu-memory-utilization", "0.30")))
    assert got["vllm-mem-b"] == from_image(vllm_container(20, ("--gpu-memory-utilization", "0.40")))
    assert got["control"] == control()
    assert got["trtllm"] == from_image(
        [
            "docker",
            "run",
            "--rm",
            "--name",
            "trtllm-lab",
            "--gpus",
            "all",
            "--ipc=host",
            "--ulimit",
            "memlock=-1",
            "--ulimit",
            "stack=67108864",
            "-v",
            f"{HOME}/models:/models:ro",
            "-v",
            f"{tmp_path}/trtllm-lab.yml:/config/trtllm-lab.yml:ro",
            "-p",
            "127.0.0.1:8082:8082",
            "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc13",
            "trtllm-serve",
            "/models/Qwen/Qwen3-8B",
            "--host",
            "0.0.0.0",
            "--port",
            "8082",
            "--max_batch_size",
            "1",
            "--max_seq_len",
            "8192",
            "--tool_parser",
            "qwen3",
            "--reasoning_parser",
            "qwen3",
            "--extra_llm_api_options",
            "/config/trtllm-lab.yml",
        ]
    )
    plan = load_plan("s")
    options = engine_defs.engine_files(
        plan.blocks["trtllm"].engine,
        block_context(plan, plan.blocks["trtllm"], tmp_path, dry_run=True).settings,
    )
    assert options == {
        "trtllm-lab.yml": "guided_decoding_backend: xgrammar\nkv_cache_config:\n  max_tokens: 8192\n"
    }


@pytest.mark.parametrize(
    "tier, slots, cache, alt, dtype, kv_bytes, fractions, desc",
    [
        (
            "24gb",
            20,
            "f16",
            "q8_0",
            "auto",
            "12079595520",
            ("0.90", "0.80"),
            "Track N, RTX 4090 24 GB, Ubuntu 24.04",
        ),
        (
            "16gb",
            20,
            "q8_0",
            "q4_0",
            "fp8",
            "6039797760",
            ("0.90", "0.85"),
            "Track N, RTX 4080 16 GB, Ubuntu 24.04",
        ),
    ],
)
def test_track_n_tiers(tmp_path, tier, slots, cache, alt, dtype, kv_bytes, fractions, desc):
    got = started("n", tier, tmp_path)
    plan = load_plan("n", tier)
    assert plan.variables["HOST_DESC"] == desc
    assert {k: got[k] for k in ("llama", "llama-slots8", "llama-ctx2048", "llama-kv-alt")} == llama_blocks(
        slots, cache, alt
    )
    vllm = f"{HOME}/vllm/.venv/bin/vllm"
    model = f"{HOME}/models/Qwen/Qwen3-8B-AWQ"
    assert got["vllm"] == [
        vllm,
        *vllm_flags(model, 20, ("--kv-cache-memory-bytes", kv_bytes), dtype, True, "127.0.0.1"),
    ]
    assert got["vllm-seqs8"][got["vllm-seqs8"].index("--max-num-seqs") + 1] == "8"
    for block, fraction in zip(("vllm-mem-a", "vllm-mem-b"), fractions, strict=True):
        assert got[block] == [
            vllm,
            *vllm_flags(model, 20, ("--gpu-memory-utilization", fraction), dtype, True, "127.0.0.1"),
        ]
    assert got["control"] == control()
    assert got["vllm-single"] == [
        vllm,
        "serve",
        model,
        "--served-model-name",
        "Qwen3-8B-AWQ",
        "--host",
        "127.0.0.1",
        "--port",
        "8083",
        "--max-model-len",
        "8192",
        "--max-num-seqs",
        "1",
        "--kv-cache-memory-bytes",
        "1342177280",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--reasoning-parser",
        "qwen3",
        "--enable-prompt-tokens-details",
    ]
    assert got["exllamav3"] == [f"{HOME}/tabbyAPI/start.sh"]
    block = plan.blocks["exllamav3"]
    files = engine_defs.engine_files(
        block.engine, block_context(plan, block, tmp_path, dry_run=True).settings
    )
    config = files[f"{HOME}/tabbyAPI/config.yml"]
    for line in (
        "host: 127.0.0.1",
        "port: 5000",
        "disable_auth: false",
        f"model_dir: {HOME}/models/turboderp",
        "model_name: Qwen3-8B-exl3-4.0bpw",
        "max_seq_len: 8192",
        "cache_size: 8192",
        "cache_mode: FP16",
        "reasoning: true",
    ):
        assert line in config


def test_track_x_engines(tmp_path):
    got = started("x", tmp=tmp_path)
    assert {k: got[k] for k in ("llama", "llama-slots8", "llama-ctx2048", "llama-kv-alt")} == llama_blocks(
        20, "f16", "q8_0"
    )
    vllm, model = f"{HOME}/vllm/.venv/bin/vllm", f"{HOME}/models/Qwen/Qwen3-8B"
    assert got["vllm"] == [
        vllm,
        *vllm_flags(model, 20, ("--kv-cache-memory-bytes", "12079595520"), "auto", True, "127.0.0.1"),
    ]
    assert got["vllm-mem-a"][got["vllm-mem-a"].index("--gpu-memory-utilization") + 1] == "0.40"
    assert got["vllm-mem-b"][got["vllm-mem-b"].index("--gpu-memory-utilization") + 1] == "0.50"
    assert got["control"] == control()
    assert got["control-hip"] == control(f"{HOME}/llama.cpp/build-hip/bin")
    for backend in ("rocm", "vulkan"):
        assert got[f"lemonade-{backend}"] == [
            "lemonade",
            "load",
            "user.Qwen3-8B-Q4_K_M",
            "--ctx-size",
            "8192",
            "--llamacpp",
            backend,
            "--llamacpp-args",
            "--flash-attn on --cache-ram 0",
        ]
    plan = load_plan("x")
    ctx = block_context(plan, plan.blocks["lemonade-rocm"], tmp_path, dry_run=True)
    assert engine_defs.engine_env(plan.blocks["lemonade-rocm"].engine, ctx.settings) == {
        "LEMONADE_HOST": "127.0.0.1",
        "LEMONADE_PORT": "13305",
    }
    assert ctx.health_url == "http://127.0.0.1:13305/v1/health"


@pytest.mark.parametrize(
    "tier, slots, cache, alt", [("32gb", 20, "f16", "q8_0"), ("16gb", 10, "q8_0", "q4_0")]
)
def test_track_m_tiers(tmp_path, tier, slots, cache, alt):
    got = started("m", tier, tmp_path)
    assert {k: got[k] for k in ("llama", "llama-slots8", "llama-ctx2048", "llama-kv-alt")} == llama_blocks(
        slots, cache, alt
    )
    mlx = f"{HOME}/models/mlx-community/Qwen3-8B-4bit"
    assert got["mlx"] == [
        "mlx_lm.server",
        "--model",
        mlx,
        "--host",
        "127.0.0.1",
        "--port",
        "8081",
        "--prompt-cache-size",
        "10",
        "--log-level",
        "INFO",
    ]
    assert got["mlx-single"][got["mlx-single"].index("--prompt-cache-size") + 1] == "1"


def flags(cmd: list[str]) -> dict[str, str]:
    out, i = {}, 1
    while i < len(cmd):
        if i + 1 < len(cmd) and not cmd[i + 1].startswith("--"):
            out[cmd[i]] = cmd[i + 1]
            i += 2
        else:
            out[cmd[i]] = ""
            i += 1
    return out


def step_command(plan, run_dir, step_id: str) -> dict[str, str]:
    step = next(s for s in plan.steps if s.id == step_id)
    ctx = block_context(plan, step.block, run_dir, dry_run=True) if step.block else None
    (cmd,) = step_calls(plan, run_dir, run_dir / "labbook.md", step, ctx)
    return flags(cmd.to_argv())


@pytest.mark.parametrize("track", ["s", "n", "x"])
def test_sweeps_pass_the_lab_pages_load_test_options(tmp_path, track):
    plan = load_plan(track)
    base = step_command(plan, tmp_path, "llama/sweep:llama-baseline")
    want = {
        "--base-url": "http://127.0.0.1:8080/v1",
        "--model": "local-chat",
        "--concurrency": "1,5,10,20",
        "--requests": "40",
        "--min-rounds": "4",
        "--max-tokens": "128",
        "--prompt-set": "mixed",
        "--engine": "llama.cpp",
        "--quant": "Q4_K_M",
        "--context-length": "4096",
        "--server-slots": "20",
        "--label": "llama-baseline",
        "--host-desc": plan.variables["HOST_DESC"],
    }
    assert {k: base[k] for k in want} == want
    unique = step_command(plan, tmp_path, "llama/sweep:llama-prefix-unique")
    shared = step_command(plan, tmp_path, "llama/sweep:llama-prefix-shared")
    assert [s.id for s in plan.steps].index("llama/sweep:llama-prefix-unique") < [
        s.id for s in plan.steps
    ].index("llama/sweep:llama-prefix-shared")  # the control first
    for cmd, kind in ((unique, "unique-prefix"), (shared, "shared-prefix")):
        assert (cmd["--concurrency"], cmd["--requests"], cmd["--max-tokens"], cmd["--prompt-set"]) == (
            "1,10",
            "40",
            "64",
            kind,
        )
    slots8 = step_command(plan, tmp_path, "llama-slots8/sweep:llama-slots8")
    assert (slots8["--concurrency"], slots8["--requests"], slots8["--server-slots"]) == ("20", "80", "8")
    assert step_command(plan, tmp_path, "llama-ctx2048/sweep:llama-ctx2048")["--context-length"] == "2048"
    assert (
        step_command(plan, tmp_path, "llama-kv-alt/sweep:llama-kv-alt")["--quant"]
        == f"Q4_K_M, KV {plan.variables['ALT_KV_TYPE']}"
    )
    vllm = step_command(plan, tmp_path, "vllm/sweep:vllm-baseline")
    assert (vllm["--base-url"], vllm["--engine"], vllm["--quant"], vllm["--server-slots"]) == (
        "http://127.0.0.1:8000/v1",
        "vllm",
        plan.variables["VLLM_QUANT"],
        "20",
    )
    seqs8 = step_command(plan, tmp_path, "vllm-seqs8/sweep:vllm-seqs8")
    assert (seqs8["--concurrency"], seqs8["--requests"], seqs8["--server-slots"]) == ("20", "80", "8")


def test_variants_state_their_one_change():
    plan = load_plan("s")
    assert plan.blocks["llama-slots8"].changed == {"slots": [20, 8]}
    assert plan.blocks["vllm-mem-a"].changed == {
        "kv_bytes": [12079595520, ""],
        "mem_fraction": ["0.90", "0.30"],
    }


def test_bad_plans_say_what_to_fix(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: bad\ntitle: t\nvariables: {}\nstages:\n  - bogus: {}\n")
    with pytest.raises(ConfigError, match="does not match schemas/track.schema.json"):
        load_plan(str(bad))
    with pytest.raises(ConfigError, match="no tier 'huge'"):
        load_plan("n", "huge")
    with pytest.raises(ConfigError, match="no plan 'nowhere'"):
        load_plan("nowhere")
    with pytest.raises(ConfigError, match="no engine definition 'warp-drive'"):
        engine_table.load_engine("warp-drive")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(
        "schema_version: 1\nname: u\ntitle: t\nvariables: {}\nstages:\n"
        "  - {id: a, engine: practice, settings: {turbo: 1}, steps: [probe]}\n"
    )
    plan = load_plan(str(unknown))
    with pytest.raises(ConfigError, match="has no setting turbo"):
        block_context(plan, plan.blocks["a"], tmp_path)
