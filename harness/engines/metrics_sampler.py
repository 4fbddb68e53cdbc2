"""Sample an engine's Prometheus ``/metrics`` while a level runs, and summarise the samples. Each
read goes through ``harness/endpoints/http_client.py`` under its two bounds (``timeout`` in all, and per gap),
with the load's key, and reads at most ``MAX_METRICS`` bytes (a bigger answer is counted as an
error, not parsed). Under gevent the text is parsed on a native thread of the hub's pool, never on
the loop that times the load's tokens. NaN and infinite values, legal in Prometheus, are skipped,
and so are values past 1e15: they would make the level's record unwritable or unreadable. Text the
parser refuses is counted as an error."""

from __future__ import annotations

import math
import re
import threading
import time
from array import array
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from harness.bounds import Bounds
from harness.measure.batch_per_decode import BATCH, DECODES, level_per_decode
from harness.errors import HarnessError
from harness.endpoints import http_client as http

# Gauges summarised as mean and max; counters reported as the change over the level.
GAUGES = (
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:n_busy_slots_per_decode",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
)
COUNTERS = (
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_tokens_cached_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:n_decode_total",  # with n_busy_slots_per_decode, the level's own batch per decode
    "vllm:num_preemptions_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
)


MAX_VALUE = 1e15  # no gauge or counter we watch comes near this; a record holds no number past it


def _plausible(value: float) -> bool:
    return math.isfinite(value) and abs(value) <= MAX_VALUE


# A line of the text format: a comment, or a sample (a name, labels maybe, a value). Anything else
# (a shell prompt pasted above the page, a Markdown-escaped "\# HELP") is left out before parsing,
# so one stray line does not cost the page's every figure.
_EXPOSITION = re.compile(r"^(?:#|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?\s+\S)")


def parse_metrics(text: str) -> dict[str, float]:
    """Sample name -> value, summed over label sets, for the families we watch. NaN, infinities
    and values past ``MAX_VALUE`` are skipped, and so are lines that are no part of the text format.
    Raises ValueError for text with no line of the format at all, or that the parser refuses."""
    wanted = set(GAUGES) | set(COUNTERS)
    out: dict[str, float] = {}
    lines = [line for line in text.splitlines() if _EXPOSITION.match(line)]
    if text.strip() and not lines:
        raise ValueError("no line of Prometheus's text format in the answer")
    for family in text_string_to_metric_families("\n".join(lines) + "\n"):
        for sample in family.samples:
            if sample.name in wanted and _plausible(float(sample.value)):
                out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    return {name: value for name, value in out.items() if _plausible(value)}


def _parsed_or_none(text: str) -> dict[str, float] | None:
    """``parse_metrics``, or None for text the parser refuses (an unknown type, a broken line): run
    on the hub's pool, an exception would be printed there with its traceback."""
    try:
        return parse_metrics(text)
    except (ValueError, TypeError, IndexError):
        return None


MAX_METRICS = 1 << 20  # an engine's /metrics is tens of kB; a bigger answer is not parsed


def _off_loop(function, *args):
    """``function(*args)`` on a native thread when gevent has patched threading (so the event loop
    that stamps tokens keeps running), else here."""
    try:
        from gevent import get_hub, monkey
    except ImportError:
        return function(*args)
    if not monkey.is_module_patched("threading"):
        return function(*args)
    return get_hub().threadpool.apply(function, args)


def summarise(snapshots: list[dict[str, float]]) -> dict:
    """Mean and max of each gauge, the change of each counter, and how many samples were taken.
    llama.cpp's ``n_busy_slots_per_decode`` is an average over the server's whole life, so its
    mean and max are of that; its ``level`` is the level's own figure, from the first and last
    samples with ``n_decode_total`` (``harness.measure.server_metrics.level_per_decode``), or
    ``level_note`` says why there is none."""
    fold = MetricsFold()
    for snapshot in snapshots:
        fold.add(snapshot)
    return fold.summary()


class _Ends:
    """The first and last of a series, and how many it had (all ``summarise`` reads of one)."""

    def __init__(self) -> None:
        self.first: Any = None
        self.last: Any = None
        self.count = 0

    def add(self, value) -> None:
        if not self.count:
            self.first = value
        self.last, self.count = value, self.count + 1

    def ends(self) -> list:
        return [self.first, self.last][2 - min(self.count, 2) :]


class MetricsFold:
    """A level's /metrics samples folded as they come (``summarise``'s figures): each gauge's
    values (8 bytes each), each counter's first and last, so a long level holds no snapshot."""

    def __init__(self) -> None:
        self.samples = 0
        self.gauges = {name: array("d") for name in GAUGES}
        self.counters = {name: _Ends() for name in COUNTERS}
        self.batch, self.batch_decodes = _Ends(), _Ends()  # the gauge, with the counter where both are

    def add(self, snapshot: dict[str, float]) -> None:
        self.samples += 1
        for name, values in self.gauges.items():
            if name in snapshot:
                values.append(snapshot[name])
        for name, ends in self.counters.items():
            if name in snapshot:
                ends.add(snapshot[name])
        if BATCH in snapshot:
            self.batch.add((snapshot[BATCH], None))
            if DECODES in snapshot:
                self.batch_decodes.add((snapshot[BATCH], snapshot[DECODES]))

    def summary(self) -> dict:
        if not self.samples:
            return {}
        summary: dict = {"samples": self.samples}
        for name, values in self.gauges.items():
            if values:
                summary[name] = {"mean": round(sum(values) / len(values), 3), "max": round(max(values), 3)}
        if BATCH in summary:
            # level_per_decode reads the first and last samples, and whether there were two
            pairs = self.batch_decodes if self.batch_decodes.count else self.batch
            level, why = level_per_decode(pairs.ends())
            summary[BATCH].update({"level": level} if level is not None else {"level_note": why})
        for name, ends in self.counters.items():
            if ends.count >= 2:
                summary[name] = {"delta": round(ends.last - ends.first, 3)}
        return summary


MAX_READINGS = 480  # readings a level keeps for its series (which draws 120 of them)


class MetricsSampler:
    """Polls ``url`` every ``interval`` seconds on a background thread (a greenlet under gevent)."""

    def __init__(
        self, url: str, interval: float = 0.5, timeout: float = 2.0, headers: dict | None = None
    ) -> None:
        self.url, self.interval, self.timeout = url, interval, timeout
        self.headers = headers or {}
        self.fold = MetricsFold()  # what the summary needs of every sample, not the samples
        self.last: dict[str, float] | None = None  # the latest sample
        self._readings: list[tuple[float, dict[str, float]]] = []  # (moment, sample), thinned
        self._stride = 1  # every how many samples one is kept in _readings
        self._seen = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> None:
        try:  # as the load client: no certificate verification
            bounds, cap = Bounds.of(self.timeout), MAX_METRICS + 1
            resp = http.request("GET", self.url, bounds, headers=self.headers, verify=False, limit=cap)
            parsed = None
            if resp.status == 200 and len(resp.body) <= MAX_METRICS:
                parsed = _off_loop(_parsed_or_none, resp.text)
            if parsed is None:
                self.errors += 1
            else:
                self.fold.add(parsed)
                self.last = parsed
                self._keep_reading(time.perf_counter(), parsed)
        except (HarnessError, ValueError, TypeError):  # no answer, past a bound, broken, a bad URL
            self.errors += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            self._stop.wait(self.interval)

    def start(self) -> None:
        self.poll_once()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(self.timeout + 1)
        self.poll_once()

    def _keep_reading(self, moment: float, parsed: dict[str, float]) -> None:
        """Keep every ``_stride``-th sample with its moment; past ``MAX_READINGS`` every other one is
        dropped and the stride doubles, so a level of any length keeps evenly spread readings."""
        if self._seen % self._stride == 0:
            self._readings.append((moment, parsed))
            if len(self._readings) > MAX_READINGS:
                self._readings = self._readings[::2]
                self._stride *= 2
        self._seen += 1

    def readings(self) -> list[tuple[float, dict[str, float]]]:
        """Samples with the moment each answer came, evenly thinned to at most ``MAX_READINGS``
        (``harness.exporter.series`` lays the client's figures beside them)."""
        return list(self._readings)

    def summary(self) -> dict:
        out = self.fold.summary()
        if self.errors and out:
            out["errors"] = self.errors
        return out
