"""``harness setup mlx-cpu``: mlx_lm.server on MLX's Linux CPU backend in its own environment with Gemma 3
270M converted to MLX float32 (install), and serving it in the foreground (serve). A rehearsal on
MLX's CPU backend: never a Mac figure."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from harness.engines import mlx_cpu
from harness.engines.launchers.base import serve_until_stopped
from harness.engines.launchers.vllm_cpu import tree_memory_mb
from harness.engines.own_env import folder_mb, ready_line
from harness import options
from harness.options.serve import ENVIRONMENT_ONLY, LOG_FILE, PORT, RECONVERT, START_TIMEOUT
from harness.options.shared import DRY_RUN


def add_parser(sub) -> None:
    p = sub.add_parser(
        "mlx-cpu", help="mlx_lm.server on MLX's CPU backend with Gemma 3 270M (install, serve)"
    )
    sub2 = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    inst = sub2.add_parser(
        "install",
        help="mlx[cpu] and mlx-lm in .venv-mlx with the pitfalls handled; convert + check the model",
    )
    options.to_argparse(inst, RECONVERT, command="mlx-cpu install")
    options.to_argparse(inst, ENVIRONMENT_ONLY, command="mlx-cpu install")
    inst.set_defaults(func=install)
    serve = sub2.add_parser(
        "serve",
        help="start mlx_lm.server, wait for a real completion, serve until Ctrl-C, prove the port free",
    )
    options.to_argparse(serve, PORT, command="mlx-cpu serve")
    serve.add_argument("--prompt-cache-size", type=int, default=10)
    options.to_argparse(serve, LOG_FILE, command="mlx-cpu serve")
    options.to_argparse(serve, START_TIMEOUT, command="mlx-cpu serve")
    options.to_argparse(serve, DRY_RUN, command="mlx-cpu serve")
    serve.set_defaults(func=serve_fg)


def install(args) -> int:
    if reason := mlx_cpu.unsupported_reason():
        print(f"mlx-cpu: skipped: {reason}")
        return 0
    t0 = time.monotonic()
    timings = mlx_cpu.ensure_environment()
    print(f"MLX:    {mlx_cpu.check_environment()}; {mlx_cpu.blas_note()}")
    env_s = time.monotonic() - t0
    if args.environment_only:
        print(ready_line(mlx_cpu.venv_dir(), timings, env_s))
        print("model:  not converted (--environment-only); make mlx-cpu converts it")
        return 0
    folder, facts = mlx_cpu.ensure_model(force=args.reconvert)
    what = (
        "reused: every file matches the SHA-256 in its manifest"
        if facts["reused"]
        else f"{facts['source']}; mlx_lm.convert {facts['mlx_convert_s']:.0f} s, all {facts['wall_s']:.0f} s"
    )
    print(f"model:  {folder} ({folder_mb(folder):.0f} MB MLX {mlx_cpu.DTYPE}; {what})")
    print(ready_line(mlx_cpu.venv_dir(), timings, env_s))
    print(f"label:  every figure from it is {mlx_cpu.LABEL}, not a Mac's")
    return 0


def serve_fg(args) -> int:
    if args.dry_run:
        env = " ".join(f"{k}={v}" for k, v in mlx_cpu.server_env().items())
        print(f"{env} {shlex.join(mlx_cpu.server_argv(args.port, args.prompt_cache_size))}")
        return 0
    launcher = mlx_cpu.launcher(args.port, Path(args.log_file), args.prompt_cache_size)
    launcher.start(timeout=args.timeout)
    mem = tree_memory_mb(launcher.pid)
    print(
        f"mlx_lm.server served a first completion {launcher.ready_after_s:.0f} s after start on "
        f"http://127.0.0.1:{args.port}/v1 (model {mlx_cpu.model_dir()}, log {args.log_file}, "
        f"{mem.get('rss_mb', '?')} MB resident; {mlx_cpu.LABEL}); Ctrl-C or SIGTERM stops it",
        flush=True,
    )
    serve_until_stopped(launcher)
    print(f"stopped; port {args.port} is free")
    return 0
