"""The live collector: one per process (``LIVE``), fed every finished request through Locust's
``request`` event (``on_request``, a plain listener: this module imports no Locust) and told the
level as it changes, served in Prometheus's text format by prometheus-client's own HTTP server.

It counts only while a level runs (``start_level``), so a sweep's warm-up is not in its totals;
``settle`` takes a finished level's whole list of samples, so a request the level accounted for
without an event (cancelled at its bound, or reported by a worker) is counted all the same, and
the totals equal the sum of the level records. A scrape renders a few dozen lines under a lock,
on the process's own loop where Locust has patched threading."""

from __future__ import annotations

import ipaddress
import sys
import threading
import time
from typing import Callable, Iterable

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from harness.measure.sample import Sample
from harness.endpoints import KINDS
from harness.errors import ConfigError
from harness.exporter import figures as f


class Exporter:
    """The process's client figures, the level now running and the server that serves them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server = None
        self._reset()

    def _reset(self) -> None:
        self.figures = f.Figures()
        self.counting = False
        self.users: float | None = None
        self.rate: float | None = None
        self.in_flight: Callable[[], int] | None = None  # None: not known here (a Locust master)
        self.url: str | None = None
        self.lead = "    "  # what the lines it prints start with (Locust's: "harness: ")
        self._seen: set[int] = set()  # ids of the running level's samples already added

    @property
    def serving(self) -> bool:
        return self._server is not None

    # -- fed by the load -------------------------------------------------------------------------

    def observe(self, sample: Sample) -> None:
        """One finished request (nothing while no level runs or nothing is served)."""
        if not (self.serving and self.counting):
            return
        with self._lock:
            if id(sample) not in self._seen:
                self._seen.add(id(sample))
                self.figures.add(sample)

    def on_request(self, request_type=None, name=None, context=None, **_kw) -> None:
        """Locust's ``request`` listener: the exact sample a harness request carries."""
        if name in KINDS and context and "sample" in context:
            self.observe(context["sample"])

    def start_level(self, users: float | None = None, rate: float | None = None) -> None:
        """A level starts: its concurrency (closed loop) or arrival rate (open loop); counting on."""
        with self._lock:
            self.users, self.rate, self.counting = users, rate, True
            self._seen = set()

    def settle(self, samples: Iterable[Sample]) -> None:
        """A level ended: every request it accounted for counted once (those no event brought too)."""
        for sample in samples:
            self.observe(sample)

    # -- served ----------------------------------------------------------------------------------

    def collect(self):
        """The metric families now (prometheus-client calls this on each scrape)."""
        with self._lock:
            fig = self.figures
            yield from _counts(fig, self.in_flight() if self.in_flight else None)
            for name, hist in ((f.TTFT, fig.ttft), (f.TPOT, fig.tpot), (f.ITL, fig.itl)):
                yield HistogramMetricFamily(
                    name, f.HELP[name], buckets=hist.cumulative(), sum_value=hist.total
                )
            for name, value in ((f.LEVEL_USERS, self.users), (f.LEVEL_RATE, self.rate)):
                if value is not None:
                    yield GaugeMetricFamily(name, f.HELP[name], value=value)

    def serve(self, port: int, host: str = "127.0.0.1") -> str:
        """Serve ``/metrics`` at ``host:port`` (ConfigError, one line, for a port already taken);
        the URL."""
        if self.serving:
            return self.url or ""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        try:
            self._server, _thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise ConfigError(
                f"--prometheus-port {port} on {host} cannot be served ({exc.strerror or exc}); "
                "choose a free port"
            ) from exc
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/metrics"
        return self.url

    def close(self, hold_s: float = 0.0) -> None:
        """Stop serving, after ``hold_s`` seconds more of it (the last level's totals scraped); the
        totals start again from zero on the next ``serve``."""
        if self._server is not None and hold_s > 0:
            print(f"{self.lead}prometheus: the final figures stay served for {hold_s:g} s", flush=True)
            time.sleep(hold_s)  # gevent's sleep where Locust has patched time: the server answers
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            self._reset()


def _counts(fig: f.Figures, in_flight: int | None):
    if in_flight is not None:
        yield GaugeMetricFamily(f.IN_FLIGHT, f.HELP[f.IN_FLIGHT], value=in_flight)
    counters = ((f.COMPLETED, fig.completed), (f.FAILED, fig.failed), (f.OUTPUT_TOKENS, fig.output_tokens))
    for name, value in counters:
        yield CounterMetricFamily(name, f.HELP[name], value=value)


LIVE = Exporter()  # this process's: Locust's listeners are module-level


def loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def start(
    port: int | None, host: str, in_flight: Callable[[], int] | None, lead: str = "    "
) -> Exporter | None:
    """``LIVE`` served at ``host:port`` with its line printed (a warning on stderr for an address
    beyond loopback); None without a port."""
    if not port:
        return None
    url = LIVE.serve(port, host)
    LIVE.in_flight, LIVE.lead = in_flight, lead
    print(f"{lead}prometheus: the client's live figures at {url}", flush=True)
    if not loopback(host):
        print(
            f"{lead}warning: --prometheus-host {host} serves the client's figures beyond this machine, "
            "with no password",
            file=sys.stderr,
        )
    return LIVE
