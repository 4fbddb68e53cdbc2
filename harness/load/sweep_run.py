"""A sweep as one run, around its levels: the checks before any load, the live collector and the
telemetry meter held open while the levels run, and the run's end with its exit status.

It prints nothing. The caller's ``SweepView`` hears each step and shows it (``harness.cli.sweep``);
``harness capacity`` shares the checks and the two open resources (``harness.load.capacity_run``).
Locust is imported only when load runs (``harness.load.runner``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

from harness.energy import meter as telemetry
from harness.energy.meter import Meter
from harness.errors import TargetError
from harness.exporter import live
from harness.load import sweep as sweeping
from harness.load.sweep import SweepPlan
from harness.load.sweep_options import label_warning
from harness.records.base import EndpointCheck
from harness.records.level import LevelRecord, STATS
from harness.records.notebook import check_writable

INTERRUPTED = 130  # Ctrl-C or SIGTERM after the first level started: the finished levels are kept
NO_REQUEST = 1  # a level completed no request


@dataclass(frozen=True)
class Exporting:
    """The live collector's options (``--prometheus-port``, ``--prometheus-host``, ``--prometheus-hold``)."""

    port: int | None = None
    host: str = "127.0.0.1"
    hold: float = 0.0


@dataclass(frozen=True)
class Swept:
    """How a sweep ended: each level record on the notebook, in order, and whether it was cut short."""

    written: list[dict]
    interrupted: bool = False

    @property
    def status(self) -> int:
        """The exit status: interrupted, a level that completed no request, or 0."""
        if self.interrupted:
            return INTERRUPTED
        return NO_REQUEST if any(r[STATS.completed] == 0 for r in self.written) else 0


class SweepView(Protocol):
    """What a sweep tells as it runs, in this order; the command line prints it."""

    def endpoint(self, check: EndpointCheck) -> None:
        """What the endpoint proof saw, before the meter opens (not called with the proof off)."""

    def before_levels(self) -> None:
        """The meter is open; the warm-up and the workers come next."""

    def ready(self) -> None:
        """The first level is about to start (after the warm-up, with the workers connected)."""

    def progress(self, level: float, progress: object) -> None:
        """A level's progress (``harness.load.runner.Progress``), about twice a second while it runs."""

    def level(self, record: dict, previous: dict | None) -> None:
        """A level's record, once it is on the notebook, with the level before it."""

    def end(self, swept: Swept) -> None:
        """The run's end, before the live collector's hold and the meter's close."""


def refuse_plain_http(plan: SweepPlan) -> None:
    """An https URL to a plain-HTTP port, said at once (TargetError) instead of at the bound."""
    from harness.load import runner  # noqa: F401  (Locust patches ssl: it must come before ssl is imported)
    from harness.endpoints import proof as endpoint_proof

    mismatch = endpoint_proof.plain_http_behind_https(plan.root + plan.base_path)
    if mismatch:
        raise TargetError(mismatch)


def checked(
    plan: SweepPlan, warn: Callable[[str], None], label: str | None = None, plain_http: bool = True
) -> list[str]:
    """The checks before any load, in order; the models the server lists. The notebook must be
    writable before the first level, not after it (the level would be lost). ``label``: warn when it
    has levels already. Then the samples file, an https URL to a plain port (``plain_http``), and
    the server's list (TargetUnreachable, one line, when nothing answers)."""
    check_writable(plan.labbook)
    warning = None if label is None else label_warning(plan.labbook, label)
    if warning:
        warn(f"warning: {warning}")
    check_writable(plan.samples_path, "--samples")
    if plain_http:
        refuse_plain_http(plan)
    return sweeping.list_models(plan)


def unlisted(listed: list[str], model: str) -> str | None:
    """The warning for a server that lists its models and not this one, or None."""
    if listed and model not in listed:
        return f"warning: the server lists {', '.join(map(str, listed))}, not {model!r}"
    return None


@contextmanager
def served(plan: SweepPlan, exporting: Exporting) -> Iterator[None]:
    """The live collector for the run's length (a port taken: exit 2), held ``hold`` s at its end."""
    live.start(exporting.port, exporting.host, sweeping.in_flight(plan))
    try:
        yield
    finally:
        live.LIVE.close(exporting.hold)


@contextmanager
def metered(plan: SweepPlan) -> Iterator[Meter | None]:
    """The telemetry meter for the run's length (None without ``--telemetry``): absent sources are
    said in one line each when it opens."""
    meter = telemetry.start(plan.telemetry)
    try:
        yield meter
    finally:
        if meter is not None:
            meter.close()


def sweep(
    plan: SweepPlan,
    listed: list[str],
    view: SweepView,
    prove: bool = True,
    exporting: Exporting = Exporting(),
) -> Swept:
    """Every level of ``plan``, each recorded before the next starts, told to ``view`` as it goes:
    the endpoint proof first (``prove``), then the meter's idle baseline, the warm-up and the levels."""
    with served(plan, exporting):
        if prove:
            view.endpoint(sweeping.prove_endpoint(plan, listed))
        with metered(plan) as meter:
            swept = _levels(plan, view, meter)
            view.end(swept)
            return swept


def _levels(plan: SweepPlan, view: SweepView, meter: Meter | None) -> Swept:
    """The levels; an interrupt after the first level started keeps those finished (one during the
    warm-up propagates, as for any other command)."""
    written: list[dict] = []
    started: list[bool] = []

    def on_ready() -> None:
        started.append(True)
        view.ready()

    def on_level(record: LevelRecord) -> None:
        written.append(record.to_dict())
        view.level(written[-1], written[-2] if len(written) > 1 else None)

    view.before_levels()
    try:
        sweeping.run_levels(plan, on_level, on_ready, on_progress=view.progress, meter=meter)
    except KeyboardInterrupt:
        if not started:
            raise
        return Swept(written, interrupted=True)
    return Swept(written)
