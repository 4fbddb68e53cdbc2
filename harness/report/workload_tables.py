"""Per-workload and per-turn tables from level records (docs/workloads.md): what each level's
workload was, the lengths asked for against those sent and received, the open loop's schedule
error, and a conversation workload's TTFT, TPOT and cached share by turn; a chart of the lengths
asked for against those sent and received, from the samples. Records and samples only; pure
apart from the section that reads the run's notebook and draws (``section``, ``length_chart``)."""

from __future__ import annotations

from pathlib import Path

from harness.measure.backlog import BACKLOG
from harness.records.level import LEVEL, STATS, Arrival, ClientCheck, Distribution
from harness.workloads.level_part import WORKLOAD, TurnRow
from harness.records.base import is_level
from harness.records.sample import SampleLine
from harness.report.markdown import table


def _ms(value) -> str:
    return "—" if value is None else f"{value * 1000:.2f}"


def _mean(dist) -> str:
    value = Distribution.read(dist).mean
    return "—" if value is None else f"{value:g}"


def _share(value) -> str:
    return "—" if value is None else f"{value:.0%}"


def has_workload(record: dict) -> bool:
    """Whether a level ran a workload beyond the prompt sets (or an open loop with its lateness)."""
    wl = record.get(WORKLOAD.workload) or {}
    return (
        bool(set(wl) - {"kind"})
        or wl.get("kind", "prompts") != "prompts"
        or WORKLOAD.schedule_lateness_s in record
    )


def _params(wl: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in wl.items() if k != "kind") or "—"


def _level(r: dict) -> str:
    rate = r.get(LEVEL.rate_rps)
    return f"{rate:g}/s" if rate else f"c = {r[STATS.concurrency]}"


def limit(r: dict) -> str:
    """An open loop's verdict: who could not keep the schedule (``client`` wins when both applied:
    harness.measure.backlog), ``kept up``, or ``too short to tell``; ``—`` for a closed loop."""
    found = r.get(WORKLOAD.backlog)
    if not isinstance(found, dict):
        return "client" if r.get(WORKLOAD.schedule_note) else "—"
    client = ClientCheck.read(r)
    if (client and client.client_limited) or r.get(WORKLOAD.schedule_note):
        return "client" + (" (server behind too)" if r.get(WORKLOAD.server_note) else "")
    if r.get(WORKLOAD.server_limited):
        finished, offered = found.get(BACKLOG.finished_rps, 0), found.get(BACKLOG.offered_rps, 0)
        return f"server ({finished:.3g} of {offered:.3g}/s finished)"
    return "kept up" if found.get(BACKLOG.judged) else "too short to tell"


def workload_rows(records: list[dict]) -> list[list[str]]:
    """One row per level: label, level, workload and parameters, lengths asked and sent (means),
    lateness p50 and p99, departure gaps' CV, and an open loop's limit (``limit``)."""
    rows = []
    for r in records:
        if not has_workload(r):
            continue
        wl = r.get(WORKLOAD.workload) or {"kind": "prompts"}
        late = Distribution.read(r.get(WORKLOAD.schedule_lateness_s))
        way = Arrival.read(r) or Arrival()
        arrival = way.kind + (f" K={way.burstiness:g}" if way.burstiness else "")
        cv = r.get(WORKLOAD.departure_gap_cv)
        rows.append(
            [
                r[LEVEL.label],
                _level(r).removeprefix("c = "),
                wl["kind"],
                _params(wl),
                arrival,
                f"{_mean(r.get(WORKLOAD.input_tokens_asked))} / {_mean(r.get(WORKLOAD.input_tokens_dist))}",
                f"{_mean(r.get(WORKLOAD.output_tokens_asked))} / {_mean(r.get(STATS.output_tokens_dist))}",
                f"{_ms(late.p50)} / {_ms(late.p99)}",
                "—" if cv is None else f"{cv:.2f}",
                limit(r),
            ]
        )
    return rows


WORKLOAD_HEADERS = [
    "label",
    "level",
    "workload",
    "parameters",
    "arrival",
    "input tok asked / sent (mean)",
    "output tok asked / received (mean)",
    "lateness p50 / p99 ms",
    "gap CV",
    "limited by",
]


def turn_rows(record: dict) -> list[list[str]]:
    """A conversation level's per-turn table rows."""
    out = []
    for t in map(TurnRow.read, record.get(WORKLOAD.per_turn) or []):
        ttft, tpot = t.ttft_s, t.tpot_s
        out.append(
            [
                str(t.turn),
                f"{t.completed}/{t.requests}",
                "—" if ttft.p50 is None else f"{ttft.p50:.3f}",
                "—" if ttft.p90 is None else f"{ttft.p90:.3f}",
                "—" if tpot.p50 is None else f"{tpot.p50 * 1000:.1f}",
                "—" if t.prompt_tokens_mean is None else f"{t.prompt_tokens_mean:g}",
                _share(t.cached_share),
            ]
        )
    return out


TURN_HEADERS = ["turn", "ok", "TTFT p50 s", "TTFT p90 s", "TPOT p50 ms", "prompt tok", "cached"]


def markdown(records: list[dict]) -> list[str]:
    """The workload table, then one per-turn table per conversation level; [] when no level ran a
    workload beyond the prompt sets."""
    rows = workload_rows(records)
    if not rows:
        return []
    lines = [table(WORKLOAD_HEADERS, rows), ""]
    said = [
        f"- {r[LEVEL.label]} at {_level(r)}: {note}"
        for r in records
        for note in (r.get(WORKLOAD.schedule_note), r.get(WORKLOAD.server_note))
        if note
    ]
    lines += [*said, ""] if said else []
    for r in records:
        if r.get(WORKLOAD.per_turn):
            lines += [
                f"Turns of {r[LEVEL.label]} at c = {r[STATS.concurrency]}:",
                "",
                table(TURN_HEADERS, turn_rows(r)),
                "",
            ]
    return lines


def length_chart(label: str, rows: list[SampleLine], path: Path) -> Path | None:
    """The input and output lengths of every completed request of one label (its sample rows):
    what was sent and received, with what the workload asked for outlined over it. None when no
    request asked for a length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [row for row in rows if row.ok]
    pairs = (
        ([row.prompt_tokens for row in ok], "input_tokens_asked", "input"),
        ([row.output_tokens for row in ok], "output_tokens_asked", "output"),
    )
    if not any(row.tags.get(asked) is not None for row in ok for _, asked, _ in pairs):
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (counted, asked, name) in zip(axes, pairs, strict=True):
        sent = [n for n in counted if n is not None]
        wanted = [row.tags[asked] for row in ok if row.tags.get(asked) is not None]
        if sent:
            ax.hist(
                sent, bins=30, alpha=0.6, label=f"{'sent' if name == 'input' else 'received'} ({len(sent)})"
            )
        if wanted:
            ax.hist(wanted, bins=30, histtype="step", linewidth=1.5, label=f"asked for ({len(wanted)})")
        ax.set_xlabel(f"{name} tokens per request")
        ax.set_ylabel("requests")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{label}: input and output lengths, asked for and as the server counted them", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def section(r) -> list[str]:
    """The run report's section (``harness.report.run_report.SECTIONS``): nothing at all when
    every level sent the labs' prompt sets in a closed loop (the labs' reports stay as they are)."""
    records = [rec for rec in r.records("level", is_level) if has_workload(rec)]
    if not records:
        return []
    lines = ["## Workloads", "", *markdown(records)]
    for label in dict.fromkeys(rec[LEVEL.label] for rec in records):
        chart = length_chart(label, r.samples(label), r.run_dir / "charts" / f"{label}-lengths.png")
        if chart is not None:
            lines += [f"![{label}: input and output lengths]({chart.relative_to(r.run_dir)})", ""]
    return lines
