"""``harness crosscheck``: run the engine's own generator at our row's conditions and compare (the
tools are ``harness.engines.crosscheck_tools``'s)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.engines import crosscheck_tools
from harness.errors import ConfigError
from harness.records.base import FIGURES, CrossCheck
from harness.records.notebook import append_record
from harness import options
from harness.options.load import MAX_TOKENS
from harness.options.record import LABEL
from harness.options.shared import CHECKPOINT, LABBOOK
from harness.options.compare import AGREEMENT, ROW
from harness.options.compare import VLLM_COMMAND


def add_parser(sub) -> None:
    p = sub.add_parser("crosscheck", help="the engine's own benchmark at our c=20 row's conditions, compared")
    options.to_argparse(p, LABBOOK, command="crosscheck")
    options.to_argparse(p, LABEL, command="crosscheck")
    options.to_argparse(p, ROW, command="crosscheck")
    p.add_argument(
        "--tool",
        choices=["vllm-bench", "batched-bench"],
        required=True,
        help="vllm-bench: `vllm bench serve` against the server; batched-bench: llama.cpp's "
        "in-process llama-batched-bench on the same model file",
    )
    p.add_argument("--output", metavar="FILE", help="read the tool's saved output instead of running it")
    p.add_argument("--prompt-tokens", type=int, help="prompt length (default: the row's mean prompt tokens)")
    options.to_argparse(p, MAX_TOKENS, command="crosscheck")
    options.to_argparse(p, AGREEMENT, command="crosscheck")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the verdict is 'client suspect' or 'above bound' (default: record and report it)",
    )
    v = p.add_argument_group("vllm-bench")
    options.to_argparse(v, VLLM_COMMAND, command="crosscheck")
    v.add_argument(
        "--exec",
        dest="exec_prefix",
        default="",
        help="run it inside the engine's container, e.g. 'docker exec vllm-lab'",
    )
    options.to_argparse(v, CHECKPOINT, command="crosscheck")
    v.add_argument("--num-prompts", type=int, help="requests (default: the row's request count)")
    v.add_argument("--goodput", default=None, help="e.g. 'ttft:2000 tpot:100' (default: the row's SLOs)")
    b = p.add_argument_group("batched-bench")
    b.add_argument("--binary", help="llama-batched-bench (default: beside the CPU track's llama-server)")
    b.add_argument("--model-file", help="the GGUF file the server loaded")
    b.add_argument("--batch", type=int, help="sequences decoded together (default: min(concurrency, slots))")
    b.add_argument("--threads", type=int, default=None)
    p.set_defaults(func=run)


def find_row(labbook: str, label: str, c: int) -> dict:
    """The notebook's latest level record for ``label`` at concurrency ``c``."""
    from harness.report.run_report import levels_in

    levels = levels_in(Path(labbook)).get(label, {})
    if c not in levels:
        raise ConfigError(
            f"no c={c} row for label {label!r} in {labbook}"
            + (f" (it has c={','.join(map(str, sorted(levels)))})" if levels else "; run the sweep first")
        )
    return levels[c]


def run(args) -> int:
    row = find_row(args.labbook, args.label, args.concurrency)
    rec, _, tolerance = crosscheck_tools.check(args, row)
    append_record(args.labbook, rec, CrossCheck.KIND)
    check = CrossCheck.read(rec)
    _print_result(args.tool, check, tolerance)
    sys.stdout.flush()
    return 1 if args.strict and check.comparison.verdict in ("client suspect", "above bound") else 0


def _print_result(tool: str, check: CrossCheck, tolerance: float) -> None:
    def f(x, spec):
        return "-" if x is None else format(x, spec)

    ours, theirs, cmp = check.ours, check.theirs, check.comparison
    speed, tpot, cpu = FIGURES.output_tokens_per_s, FIGURES.tpot_p50_s, FIGURES.client_cpu
    print(
        f"    output tok/s  ours {ours[speed]:.1f}  {tool} "
        f"{theirs[speed]:.1f}  ratio {f(cmp.output_tokens_per_s_ratio, '.3f')}"
    )
    print(
        f"    TPOT p50 (s)  ours {f(ours[tpot], '.4f')}  {tool} {f(theirs[tpot], '.4f')}"
        f"  ratio {f(cmp.tpot_p50_ratio, '.3f')}"
    )
    o_cpu, t_cpu = ours.get(cpu), theirs.get(cpu)
    if o_cpu is not None or t_cpu is not None:
        print(f"    client CPU    ours {f(o_cpu, '.0%')}  {tool} {f(t_cpu, '.0%')} of a core while measuring")
    print(f"    verdict: {cmp.verdict} (tolerance {tolerance:.0%})" + "".join(f"; {n}" for n in cmp.notes))
