"""``harness sweep``'s options for load from several Locust workers (docs/measuring.md, "Workers
on other machines"): local worker processes (``--processes``), the compose launcher's containers
(``--worker-command``), or workers on other hosts (``--expect-workers``, each started there by
``harness worker``); their checks, the line saying what to start on each worker host, and each
worker's part of a level as printed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.options.workers import LOCUST_MASTER_PORT

if TYPE_CHECKING:
    from harness.load.sweep import SweepPlan


def check(args, open_loop: bool) -> None:
    """The workers' options together (ConfigError, one line); their ranges are declared
    (``harness.options.workers``)."""
    if (args.processes or args.expect_workers) and (open_loop or args.duration or args.prompt_file):
        raise ConfigError(
            "--processes and --expect-workers work with the closed loop and the built-in prompt sets only"
        )
    if args.processes and args.expect_workers:
        raise ConfigError(
            "--processes (workers here) and --expect-workers (workers on other hosts): choose one"
        )
    if args.master_port is not None and not (args.processes or args.expect_workers):
        raise ConfigError("--master-port needs --processes N or --expect-workers N")
    if args.worker_command and not args.processes:
        raise ConfigError("--worker-command needs --processes N (how many workers to start)")


def master_port(args) -> int:
    """The master's port: the one given, else Locust's own for workers elsewhere, else any free one."""
    if args.master_port is not None:
        return args.master_port
    return LOCUST_MASTER_PORT if args.expect_workers else 0


def waiting_line(plan: SweepPlan) -> str:
    """What to start on each worker host, said before the master waits for them."""
    host = plan.master_host if plan.master_host not in ("0.0.0.0", "::") else "THIS-HOST"
    url = plan.worker_url or plan.root
    line = (
        f"    waiting up to {plan.worker_wait_s:g} s for {plan.expect_workers} Locust worker(s) at "
        f"{plan.master_host}:{plan.master_port}; on each worker host run: harness worker --master-host "
        f"{host} --master-port {plan.master_port} (they load {url}; the key, if any, from "
        f"{plan.api_key_env} there)"
    )
    if plan.master_host not in ("127.0.0.1", "::1", "localhost"):
        line += (
            f"\n    warning: the master's port {plan.master_port} has no authentication: let only the "
            "worker hosts reach it (firewall)"
        )
    return line


def worker_lines(record: dict) -> list[str]:
    """Each worker's part of a distributed level: its requests, what came back, its CPU and late
    reads, and the words for one that could not keep up or was lost."""
    lines = []
    for w in record.get("workers") or []:
        cpu = "?" if w["cpu_percent"] is None else f"{w['cpu_percent']:.1f} %"
        late = "?" if w["late_share"] is None else f"{100 * w['late_share']:.2f} %"
        text = (
            f"      worker {w['worker']}: {w['users']} user(s), {w['returned']} of {w['requests']} "
            f"requests back ({w['completed']} ok), CPU {cpu}, tokens read late {late}"
        )
        if w.get("lost"):
            text += f"; LOST: {w['lost']}"
        elif w["limited"]:
            text += "; this worker could not keep up (CPU or late reads): add a worker host"
        lines.append(text)
    return lines
