"""The option sets ``harness sweep`` takes, and ``harness capacity``'s (the same less the levels: the
search chooses its own concurrency, so no --concurrency, --rate, --duration, --repeat, --burstiness
or trace)."""

from __future__ import annotations

from harness.options import OptionSet, load as load_options, workload
from harness.options.load import LOAD
from harness.options.prometheus import PROMETHEUS
from harness.options.record import RECORD
from harness.options.slo import SLO
from harness.options.telemetry import TELEMETRY_SET
from harness.options.workers import WORKERS
from harness.options.workload import WORKLOADS


def option_sets(levels: bool = True) -> tuple[OptionSet, ...]:
    """The sweep's option sets; without ``levels`` the capacity search's."""
    if levels:
        return (LOAD, SLO, RECORD, WORKLOADS, WORKERS, TELEMETRY_SET, PROMETHEUS)
    less_load, less_workload = LOAD.without(*load_options.LEVELS), WORKLOADS.without(*workload.LEVELS)
    return (less_load, SLO, RECORD, less_workload, WORKERS, TELEMETRY_SET, PROMETHEUS)
