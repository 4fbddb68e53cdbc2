"""Charts (PNG, matplotlib, no display needed), drawn from level records only."""

from __future__ import annotations

from pathlib import Path

import matplotlib

from harness.measure.curves import completed_levels, spread_of
from harness.records.base import HEAD
from harness.records.level import DIST, LEVEL, STATS, LevelStats
from harness.records.sample import SampleLine
from harness.energy import report_section as energy_section

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


REHEARSAL_MARK = "REHEARSAL on CPU stand-ins, not the track's hardware"


def rehearsal_mark(records) -> str:
    """What a chart drawn from a rehearsal's records says first ('' for a real run's)."""
    return REHEARSAL_MARK if any(r.get(HEAD.rehearsal) for r in records) else ""


def conditions(levels_by_label: dict[str, dict[int, dict]], promise_s: float | None) -> str:
    """The test conditions printed above every chart: traffic profile, crowd sizes, promise."""
    recs = [r for lv in levels_by_label.values() for r in lv.values()]
    prompt = [m for r in recs if (m := LevelStats.read(r).prompt_tokens_mean)]
    max_out = sorted({r.get(LEVEL.max_tokens) for r in recs if r.get(LEVEL.max_tokens)})
    crowds = sorted({c for lv in levels_by_label.values() for c in lv})
    text = (
        f"about {round(sum(prompt) / len(prompt)) if prompt else '?'} tokens in / up to "
        f"{', '.join(map(str, max_out)) or '?'} out · {crowds[0]} to {crowds[-1]} at once (closed loop)"
    )
    if promise_s is not None:
        text += f" · promise: p95 first token within {promise_s:g} s"
    mark = rehearsal_mark(recs)
    return f"{mark}\n{text}" if mark else text


def _errors(levels: dict[int, dict], cs: list[int], key: str, pct: str | None, values: list) -> list | None:
    """Error bars (below, above) from the range of each level's runs; None when no level repeated."""
    spans = [spread_of(levels[c], key, pct) for c in cs]
    if not any(spans):
        return None
    below = [v - s[0] if s and v is not None else 0 for v, s in zip(values, spans, strict=True)]
    above = [s[1] - v if s and v is not None else 0 for v, s in zip(values, spans, strict=True)]
    return [below, above]


def crowd_chart(
    levels_by_label: dict[str, dict[int, dict]],
    path: str | Path,
    promise_s: float | None = None,
    styles: dict[str, dict] | None = None,
) -> Path:
    """Total output tokens/s and p95 first-token wait against crowd size, one line per label; a
    level run more than once has error bars spanning its runs (smallest to largest). ``styles``:
    a label's line style (colour, marker, line style), where a comparison groups its runs."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    repeated = False
    for label, levels in levels_by_label.items():
        style = {"marker": "o", **(styles or {}).get(label, {})}
        cs = completed_levels(levels)
        out = [LevelStats.read(levels[c]).output_tokens_per_s for c in cs]
        err = _errors(levels, cs, STATS.output_tokens_per_s, None, out)
        top.errorbar(cs, out, yerr=err, capsize=3, label=label, **style)
        p95 = [LevelStats.read(levels[c]).ttft_s.p95 for c in cs]
        shown = [(c, v) for c, v in zip(cs, p95, strict=True) if v is not None]
        if shown:
            xs, ys = [c for c, _ in shown], [v for _, v in shown]
            bottom.errorbar(
                xs,
                ys,
                yerr=_errors(levels, xs, STATS.ttft_s, DIST.p95, ys),
                capsize=3,
                label=label,
                **style,
            )
        repeated = repeated or err is not None
    if promise_s is not None:
        bottom.axhline(promise_s, color="grey", linestyle="--", linewidth=1, label=f"promise {promise_s:g} s")
    top.set_ylabel("total output (tokens/s)")
    bottom.set_ylabel("first-token wait p95 (s)")
    bottom.set_xlabel("people at once (concurrency)")
    bottom.set_xticks(sorted({c for lv in levels_by_label.values() for c in lv}))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    title = conditions(levels_by_label, promise_s)
    if repeated:
        title += "\nerror bars: range of the repeated runs of a level (median marked)"
    fig.suptitle(title, fontsize=9)
    return _save(fig, path)


def pareto_chart(
    levels_by_label: dict[str, dict[int, dict]], path: str | Path, styles: dict[str, dict] | None = None
) -> Path:
    """Per-user output speed (1 / TPOT p50: what one person sees while the answer streams) against
    total output tokens/s, one point per level labelled with its crowd, one line per label
    (``styles`` as for ``crowd_chart``)."""
    fig, ax = plt.subplots(figsize=(7, 5))
    for label, levels in levels_by_label.items():
        typed = {c: LevelStats.read(levels[c]) for c in completed_levels(levels)}
        cs = [c for c, st in typed.items() if (st.tpot_s.p50 or 0) > 0]
        xs = [typed[c].output_tokens_per_s for c in cs]
        ys = [1 / typed[c].tpot_s.p50 for c in cs]
        ax.plot(xs, ys, label=label, **{"marker": "o", **(styles or {}).get(label, {})})
        for c, x, y in zip(cs, xs, ys, strict=True):
            ax.annotate(f"c={c}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("total output (tokens/s)")
    ax.set_ylabel("per-user output (tokens/s, 1 / TPOT p50)")
    ax.set_title("Per-user against total output: each point a crowd size", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(conditions(levels_by_label, None), fontsize=9)
    return _save(fig, path)


def tpot_chart(label: str, levels: dict[int, dict], fit: dict | None, path: str | Path) -> Path:
    """TPOT p50 and p90 against concurrency with the fitted line a + b c, drawn only over the
    levels it was fitted on."""
    cs = completed_levels(levels)
    fig, ax = plt.subplots(figsize=(7, 4))
    tpot = [LevelStats.read(levels[c]).tpot_s for c in cs]
    ax.plot(cs, [t.p50 for t in tpot], "o", label="TPOT p50")
    ax.plot(cs, [t.p90 for t in tpot], "x", label="TPOT p90")
    if fit:
        used = fit["levels_used"]
        xs = [min(used), max(used)]
        ax.plot(
            xs,
            [fit["a_s"] + fit["b_s"] * x for x in xs],
            "-",
            linewidth=1,
            label=f"fit {fit['a_s'] * 1000:.1f} ms + {fit['b_s'] * 1000:.2f} ms x c (c = {xs[0]} to {xs[1]})",
        )
    ax.set_xlabel("concurrency")
    ax.set_ylabel("time per output token (s)")
    mark = rehearsal_mark(levels.values())
    ax.set_title(f"{label}: TPOT against concurrency" + (f"\n{mark}" if mark else ""), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def latency_histogram(label: str, samples: list[SampleLine], path: str | Path, mark: str = "") -> Path:
    """The distribution of first-token wait and end-to-end latency of every completed request of
    one curve (the samples file's rows), one outline per crowd size."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    ok = [s for s in samples if s.ok]
    for ax, latency in ((left, _ttft), (right, _end)):
        every = [v for s in ok if (v := latency(s)) is not None]
        if not every:
            continue
        low, high = min(every), max(every)
        bins = [low + (high - low) * i / 40 for i in range(41)] if high > low else 1
        for c in sorted({s.concurrency for s in ok}):
            values = [v for s in ok if s.concurrency == c and (v := latency(s)) is not None]
            if values:
                ax.hist(values, bins=bins, histtype="step", label=f"c={c} ({len(values)})")
    left.set_xlabel("first-token wait, TTFT (s)")
    right.set_xlabel("end-to-end latency (s)")
    for ax in (left, right):
        ax.set_ylabel("requests")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    title = f"{label}: latency of every completed request, per crowd size"
    fig.suptitle(f"{mark}\n{title}" if mark else title, fontsize=10)
    return _save(fig, path)


def _ttft(s: SampleLine) -> float | None:
    return s.ttft_s


def _end(s: SampleLine) -> float | None:
    return s.end_s


def requests_over_time(label: str, samples: list[SampleLine], path: str | Path, mark: str = "") -> Path:
    """Requests in flight over the curve's run (each request from its departure to its end, on the
    client's monotonic clock), and each failed request marked where it ended."""
    spans = [
        (s.departed_monotonic_s, s.departed_monotonic_s + s.end_s, s.concurrency, bool(s.ok))
        for s in samples
        if s.departed_monotonic_s is not None and s.end_s is not None
    ]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    if spans:
        t0 = min(start for start, _, _, _ in spans)
        events = sorted([(a - t0, 1) for a, _, _, _ in spans] + [(b - t0, -1) for _, b, _, _ in spans])
        xs, ys, now = [0.0], [0], 0
        for t, step in events:
            now += step
            xs.append(t)
            ys.append(now)
        ax.step(xs, ys, where="post", linewidth=1, label="in flight")
        failed = [b - t0 for _, b, _, ok in spans if not ok]
        if failed:
            ax.plot(failed, [0] * len(failed), "rx", label=f"failed ({len(failed)})")
    ax.set_xlabel("seconds since the curve's first request")
    ax.set_ylabel("requests in flight")
    title = f"{label}: requests over time (every level in the order run)"
    ax.set_title(f"{mark}\n{title}" if mark else title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def energy_chart(levels_by_label: dict[str, dict[int, dict]], path: str | Path) -> Path:
    """The energy section's chart (harness.energy.report_section.chart) drawn: two panels, the
    test conditions above them and, for an imitation's figures, its mark first in dark red."""
    drawn = energy_section.chart(levels_by_label)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, panel in zip(axes, drawn.panels, strict=True):
        for s in panel.series:
            ax.plot(s.x, s.y, marker="o", label=s.name)
            for x, y, note in zip(s.x, s.y, s.notes, strict=False):
                ax.annotate(note, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlabel(panel.x_label)
        ax.set_ylabel(panel.y_label)
        ax.set_title(panel.title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    title = conditions(levels_by_label, None)
    fig.suptitle(
        f"{drawn.mark}\n{title}" if drawn.mark else title, fontsize=9, color="darkred" if drawn.mark else None
    )
    return _save(fig, path)


def series_chart(label: str, records: list[dict], path: str | Path, mark: str = "") -> Path:
    """The server's and the client's time series of a curve, its levels end to end in the order
    run: requests in flight beside the server's running and waiting gauges, then each side's
    output tokens per second between two readings (``harness.exporter.series``)."""
    from harness.exporter import series as es

    fig, (top, low) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    offset = 0.0
    for n, r in enumerate(records):
        s = r[LEVEL.series]
        t = [offset + x for x in s[es.SERIES.t_s]]
        server, client = s[es.SERIES.server], s[es.SERIES.client]
        first = n == 0
        top.step(
            t,
            client["in_flight_requests"],
            where="post",
            color="C0",
            label="client: in flight" if first else None,
        )
        for names, style, what in ((es.RUNNING, "--", "running"), (es.WAITING, ":", "waiting")):
            name = es.first_of(names, server)
            if name:
                top.plot(
                    t, server[name], style, color="C1", label=f"server: {what} ({name})" if first else None
                )
        pairs = [("C0", "client: output tokens/s", client["output_tokens"])]
        made = es.first_of(es.GENERATED, server)
        if made:
            pairs.append(("C1", f"server: {made} /s", server[made]))
        for color, name, totals in pairs:
            xs, ys = _rates(t, totals)
            low.plot(
                xs, ys, color=color, linestyle="-" if color == "C0" else "--", label=name if first else None
            )
        top.axvline(offset, color="grey", alpha=0.3, linewidth=0.8)
        top.annotate(f"c={r.get(STATS.concurrency)}", (offset, 0), fontsize=7, color="grey")
        offset = t[-1] + 0.5
    top.set_ylabel("requests")
    low.set_ylabel("output tokens/s")
    low.set_xlabel("seconds, the curve's levels end to end")
    title = f"{label}: the server's /metrics and the client's own figures at the same instants"
    top.set_title(f"{mark}\n{title}" if mark else title, fontsize=10)
    for ax in (top, low):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _rates(t: list[float], totals: list) -> tuple[list[float], list[float]]:
    """A running total's rise per second between readings, at each interval's end."""
    xs, ys = [], []
    points = list(zip(t, totals, strict=True))
    for (t0, a), (t1, b) in zip(points, points[1:], strict=False):
        if a is not None and b is not None and t1 > t0:
            xs.append(t1)
            ys.append((b - a) / (t1 - t0))
    return xs, ys
