"""The engine's own benchmark run at one of our rows' conditions (``vllm bench serve``, llama.cpp's
``llama-batched-bench``), its output read and compared with the row: the cross-check record."""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path

import psutil

from harness.measure import crosscheck
from harness.records.level import LevelStats
from harness.records.labels import file_label
from harness.records.base import FIGURES, Comparison, CrossCheck
from harness.errors import ConfigError, InstallError, TargetError
from harness.records.clock import now_stamp


def vllm_argv(args, row: dict, prompt_tokens: int, max_tokens: int) -> list[str]:
    base = row["base_url"].rstrip("/").removesuffix("/v1")
    goodput = args.goodput or " ".join(
        f"{k}:{round(row[f] * 1000)}"
        for k, f in (("ttft", "slo_ttft_s"), ("tpot", "slo_tpot_s"))
        if row.get(f)
    )
    argv = [
        *shlex.split(args.exec_prefix),
        args.vllm,
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        base,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        args.checkpoint or row["model"],
        "--served-model-name",
        row["model"],
        "--dataset-name",
        "random",
        "--random-input-len",
        str(prompt_tokens),
        "--random-output-len",
        str(max_tokens),
        "--ignore-eos",
        "--num-prompts",
        str(args.num_prompts or row["requests"]),
        "--max-concurrency",
        str(args.concurrency),
        "--percentile-metrics",
        "ttft,tpot,itl",
        "--metric-percentiles",
        "50,90",
    ]
    # The row's sampling too: vllm bench serve no longer asks for greedy decoding, and on a CPU a
    # sampled token over Gemma's 262,144-word vocabulary costs measurably more than an argmax.
    temperature = row.get("temperature")
    argv += ["--temperature", f"{temperature:g}"] if temperature is not None else []
    return argv + (["--goodput", *goodput.split()] if goodput else [])


def batched_argv(args, row: dict, prompt_tokens: int, max_tokens: int) -> tuple[list[str], int]:
    if not args.model_file:
        raise ConfigError("--model-file is needed for batched-bench: the GGUF file the server loaded")
    binary = args.binary
    if not binary:
        from harness.engines import llama_cpu

        binary = str(llama_cpu.find_llama_server().with_name("llama-batched-bench"))
    if not Path(binary).is_file():
        raise InstallError(
            f"{binary} not found: llama-batched-bench is built with llama.cpp (make llama-cpu)"
        )
    batch = args.batch or min(args.concurrency, row.get("server_slots") or args.concurrency)
    argv = [
        binary,
        "-m",
        args.model_file,
        "-c",
        str(batch * (prompt_tokens + max_tokens) + 256),
        "-npp",
        str(prompt_tokens),
        "-ntg",
        str(max_tokens),
        "-npl",
        str(batch),
    ]
    return argv + (["-t", str(args.threads)] if args.threads else []), batch


def run_tool(argv: list[str], say=print) -> tuple[str, list[tuple[float, float]]]:
    """The tool's printed output, and its CPU seconds (its process tree, user + system) sampled
    every quarter second against the monotonic clock: on a CPU-bound server a client's own CPU is
    taken from the server, so what the tool's client cost belongs beside its figures."""
    say("    $ " + shlex.join(argv))
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        raise InstallError(f"{argv[0]} not found: install it or pass its path") from None
    cpu: list[tuple[float, float]] = []
    reader = threading.Thread(target=lambda: cpu.extend(_cpu_samples(proc.pid, proc)), daemon=True)
    reader.start()
    try:
        text, _ = proc.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TargetError(f"{argv[0]} ran past 30 minutes; stopped") from None
    reader.join(timeout=5)
    return text, cpu


def _cpu_samples(pid: int, proc: subprocess.Popen) -> list[tuple[float, float]]:
    samples: list[tuple[float, float]] = []
    try:
        top = psutil.Process(pid)
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                tree = [top, *top.children(recursive=True)]
                total = 0.0
                for p in tree:
                    with contextlib.suppress(psutil.Error):
                        t = p.cpu_times()
                        total += t.user + t.system
                samples.append((time.monotonic(), total))
            time.sleep(0.25)
    except psutil.Error:
        pass
    return samples


def check(args, row: dict, say=print) -> tuple[dict, dict, float]:
    """The cross-check record of ``row`` (our level record) against the tool ``args.tool`` names,
    run here (its output kept beside the notebook) or read from ``args.output``; with the
    comparison and the tolerance it used."""
    prompt_tokens = args.prompt_tokens or max(1, round(row.get("prompt_tokens_mean") or 40))
    max_tokens = args.max_tokens or row.get("max_tokens") or 128
    say(
        f"==> cross-check {args.label} c={args.concurrency} with {args.tool}: {prompt_tokens} prompt tokens, "
        f"{max_tokens} output tokens"
    )
    batch = None
    if args.tool == "vllm-bench":
        argv = vllm_argv(args, row, prompt_tokens, max_tokens)
    else:
        argv, batch = batched_argv(args, row, prompt_tokens, max_tokens)
    text, cpu = (Path(args.output).read_text(encoding="utf-8"), []) if args.output else run_tool(argv, say)
    if not args.output:  # what the tool printed, kept beside the notebook for whoever reads the verdict
        saved = (
            Path(args.labbook).parent
            / f"crosscheck-{file_label(args.label)}-c{args.concurrency}-{args.tool}.txt"
        )
        saved.write_text(text, encoding="utf-8")
        say(f"    the tool's output: {saved}")
    local = not args.exec_prefix.strip().startswith("docker")  # a tool in a container: not our child's CPU
    if args.tool == "vllm-bench":
        theirs, bound, tolerance = crosscheck.parse_vllm_bench(text), False, args.tolerance
        theirs["client_cpu"] = crosscheck.cpu_share(cpu, theirs.get("duration_s")) if local else None
    else:
        rows = [
            r for r in crosscheck.parse_batched_bench(text) if r["b"] == batch
        ] or crosscheck.parse_batched_bench(text)[-1:]
        theirs, bound, tolerance = crosscheck.batched_as_service(rows[0]), True, args.tolerance
    cores = psutil.cpu_count() if _on_this_host(row) else None
    cmp = crosscheck.compare(row, theirs, tolerance, bound=bound, cores=cores)
    ours, their_view = _views(row, theirs)
    rec = CrossCheck(
        label=args.label,
        concurrency=args.concurrency,
        tool=args.tool,
        command=shlex.join(argv),
        from_file=bool(args.output),
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        ours=ours,
        theirs=their_view,
        comparison=Comparison.read(cmp),
        checked_at=now_stamp(),
    ).to_dict()
    return rec, cmp, tolerance


def _on_this_host(row: dict) -> bool:
    """The row's server listened on this machine's loopback (its cores are the client's)."""
    host = urllib.parse.urlsplit(row.get("base_url") or "").hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def _views(row: dict, theirs: dict) -> tuple[dict, dict]:
    """Our row and the tool's result in the same shape, for the record."""
    ours = {
        FIGURES.output_tokens_per_s: LevelStats.read(row).output_tokens_per_s,
        FIGURES.tpot_p50_s: row["tpot_s"].get("p50"),
        FIGURES.ttft_p50_s: row["ttft_s"].get("p50"),
        "completed": row["completed"],
        "prompt_tokens_mean": row.get("prompt_tokens_mean"),
        "max_tokens": row.get("max_tokens"),
        FIGURES.client_cpu: row.get("client_cpu"),
    }
    their_view = {
        FIGURES.output_tokens_per_s: LevelStats.read(theirs).output_tokens_per_s,
        FIGURES.tpot_p50_s: (theirs.get("tpot_s") or {}).get("p50"),
        FIGURES.ttft_p50_s: (theirs.get("ttft_s") or {}).get("p50"),
        **{
            k: theirs[k]
            for k in (
                "completed",
                "failed",
                "batch",
                "max_concurrency",
                "goodput_requests_per_s",
                "input_tokens",
                "duration_s",
                "client_cpu",
            )
            if k in theirs
        },
    }
    return ours, their_view
