"""The options of workers on other hosts (harness sweep --expect-workers, harness worker): checked
before anything starts, and the worker's command line as it runs."""

from __future__ import annotations

import pytest

from harness.cli import build_parser, sweep, worker
from harness.errors import ConfigError


def plan(*extra: str):
    args = build_parser().parse_args(["sweep", "--model", "m", *extra])
    return sweep.plan_from(args)


def test_expect_workers_binds_the_master_on_locusts_port_unless_told():
    p = plan("--expect-workers", "2", "--master-host", "10.0.0.1", "--worker-url", "http://10.0.0.9:8000")
    assert (p.expect_workers, p.processes, p.master_host, p.master_port) == (2, 0, "10.0.0.1", 5557)
    assert p.worker_url == "http://10.0.0.9:8000"
    assert plan("--processes", "2").master_port == 0  # local workers: a free port
    assert plan("--expect-workers", "1", "--master-port", "6000").master_port == 6000


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--expect-workers", "2", "--processes", "2"], "choose one"),
        (["--expect-workers", "2", "--duration", "5"], "closed loop"),
        (["--master-port", "6000"], "--master-port needs --processes N or --expect-workers N"),
        (["--expect-workers", "1", "--master-port", "70000"], "--master-port"),
        (["--expect-workers", "-1"], "--expect-workers"),
        (["--expect-workers", "1", "--worker-wait", "0"], "--worker-wait"),
    ],
)
def test_bad_worker_options_are_one_line_before_anything_starts(extra, words):
    with pytest.raises(ConfigError, match=words.replace("-", r"\-")):
        plan(*extra)


def test_the_worker_command_is_locust_s_own_worker_of_the_harness_locustfile(capsys):
    args = build_parser().parse_args(
        ["worker", "--master-host", "10.0.0.1", "--master-port", "6000", "--name", "w1", "--dry-run"]
    )
    assert worker.run(args) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("HARNESS_SWEEP_WORKER=1 HARNESS_WORKER_NAME=w1 ")
    assert line.endswith("harness/load/locustfile.py --worker --master-host 10.0.0.1 --master-port 6000")
