"""What ``harness summarise`` shows of a notebook, as lines: a label's curve and its tables (the
engine's own metrics, falls in throughput, workloads, energy), the capacity within a promise, two
labels compared, the admission recommendations and the lab's validation rules."""

from __future__ import annotations

from numbers import Real

from tabulate import tabulate

from harness.records.sizing import AdmissionRecommendation
from harness.sizing import admission, criterion as sizing
from harness.measure import curves
from harness.records.level import LEVEL, STATS, LevelStats
from harness.records.base import CurveRun, CurveSummary, TpotFit, is_admission, is_level, machine_of
from harness.errors import ConfigError
from harness.records.clock import now_stamp
from harness.records.notebook import read_records
from harness.report import curve_tables as tables
from harness.report.troubleshooting import load_errors


def read_curves(path: str) -> tuple[dict[str, dict[int, dict]], list[str]]:
    """The notebook's level records by label and concurrency, and a warning for each record
    skipped (a negative figure, a line break in a text field) or line not read."""
    result = read_records(path, "level", select=is_level)
    warnings = [f"warning: {w}" for w in result.warnings]
    kept = []
    for record in result.records:
        bad, broken = negative_figure(record), line_break(record)
        where = f"label {record.get(LEVEL.label)!r} at c={record.get(STATS.concurrency)}"
        if bad:
            warnings.append(f"warning: {path}: {where}: {bad} is negative; record skipped")
        elif broken:  # printed, it would start a line of its own (a forged PASS line, say)
            warnings.append(f"warning: {path}: {where}: {broken} holds a line break; record skipped")
        else:
            kept.append(record)
    return curves.by_label(kept), warnings


def line_break(record: dict) -> str | None:
    """The first text field of a level record holding a line break, or None: no command writes
    one, so the record was edited by hand, and a table row would break where it stands."""
    for key, value in record.items():
        if isinstance(value, str) and ("\n" in value or "\r" in value):
            return key
    return None


def negative_figure(record: dict) -> str | None:
    """The first time or rate of a level record below zero (``ttft_s.p50``, ``wall_s``, ...), or
    None: no client measures one, so the record was written by hand or broken."""
    for key, value in record.items():
        if not key.endswith(("_s", "_per_s", "_tokens")):
            continue
        values = value.items() if isinstance(value, dict) else [("", value)]
        for part, v in values:
            if isinstance(v, Real) and not isinstance(v, bool) and v < 0:
                return f"{key}.{part}" if part else key
    return None


def missing(label: str, labels: dict) -> ConfigError:
    """The error for a label the notebook does not hold, naming those it does."""
    return ConfigError(
        f"no records for label {label!r}; labels present: {', '.join(sorted(labels)) or 'none'}"
    )


def _indented(text: str) -> list[str]:
    return ["    " + line for line in text.splitlines()]


def server_metrics_lines(levels: dict[int, dict]) -> list[str]:
    """Per level, the engine's own /metrics: queue peaks, llama.cpp's batch per decode call, vLLM's
    KV pool used, the cached shares; then the batch achieved and the admission limit in words."""
    from harness.measure import server_metrics

    head, rows = server_metrics.table(levels)
    if not rows:
        return []
    text = tabulate(rows, headers=head, disable_numparse=True)
    notes = [f"    {note}" for note in server_metrics.use_notes(levels)]
    return ["", "    the engine's own /metrics per level:", *_indented(text), *notes]


def falls_lines(label: str, levels: dict[int, dict]) -> list[str]:
    """Each fall in output tokens/s between neighbouring levels, as the check and the report name it:
    past the run-to-run noise, past saturation (a warning); within it, noise (a note)."""
    from harness.measure import server_metrics

    return [f"    warning: {text}" for _, text in server_metrics.level_findings(label, levels)] + [
        f"    note: throughput held: {text}" for text in server_metrics.noise_notes(levels)
    ]


def energy_lines(levels: dict[int, dict]) -> list[str]:
    """Per level, its power, J per output token, output tokens per J and cost; then the operating
    point's (nothing for a curve whose sweeps read no telemetry and had no price)."""
    from harness.energy import tables as energy_tables

    if not energy_tables.measured(levels):
        return []
    marks = energy_tables.labels(levels)
    said = f" ({', '.join(m.upper() for m in marks)}: made up, not measured)" if marks else ""
    text = tabulate(
        energy_tables.energy_rows(levels), headers=energy_tables.ENERGY_HEAD, disable_numparse=True
    )
    point = energy_tables.operating_energy_line(levels)
    return [
        "",
        f"    energy and cost per level{said}:",
        *_indented(text),
        *([f"    {point}"] if point else []),
    ]


def workload_lines(levels: dict[int, dict]) -> list[str]:
    """The label's workload table and per-turn tables, for levels beyond the prompt sets."""
    from harness.report import workload_tables

    lines = workload_tables.markdown([levels[c] for c in sorted(levels)])
    if not lines:
        return []
    return ["", *("    " + line if line else "" for line in "\n".join(lines).splitlines())]


def list_lines(labels: dict[str, dict[int, dict]], labbook: str) -> list[str]:
    """Every label in the notebook: its engine, prompt set, levels and when it was last recorded."""
    rows = [
        [
            name,
            r.get(LEVEL.engine, "?"),
            r.get(LEVEL.prompt_set, "?"),
            ",".join(map(str, sorted(lv))),
            r.get(LEVEL.recorded_at, "?"),
        ]
        for name, lv in labels.items()
        for r in [lv[max(lv)]]
    ]
    head = ["label", "engine", "prompt set", "levels", "last recorded"]
    return [f"==> {len(labels)} label(s) in {labbook}", *tabulate(rows, headers=head).splitlines()]


def chart_lines(shown: dict[str, dict[int, dict]], path: str, promise: float | None) -> list[str]:
    """The crowd chart drawn at ``path`` and the Pareto chart beside it (``<name>-pareto.png``)."""
    from pathlib import Path

    from harness.report.charts import crowd_chart, pareto_chart

    beside = Path(path).with_name(Path(path).stem + "-pareto.png")
    return [
        f"    chart: {crowd_chart(shown, path, promise)}",
        f"    Pareto chart (per-user against total output tok/s): {pareto_chart(shown, beside)}",
    ]


def capacity_lines(
    levels: dict[int, dict], promise: float, peak: int | None, spares: float
) -> tuple[int | None, list[str]]:
    """How many people at once get a first token within the promise (never more than the levels
    show: "at least" when the top level kept it), and copies for a peak."""
    found = curves.capacity_reading(levels, promise)
    out = [f"    {tables.capacity_line(levels, promise)}"]
    capacity = found.capacity
    if not capacity:
        return capacity, out
    out += [f"    {line}" for line in sizing.alone_against_capacity(levels, capacity)]
    if peak:
        need, spare = curves.copies_for(peak, capacity, spares)
        bound = "" if found.reading == "exact" else " (at most: the capacity is a lower bound)"
        out.append(
            f"    a peak of {peak} needs {peak} / {capacity} -> {need} copies, {spare} with "
            f"{spares:.0%} spares{bound}"
        )
    return capacity, out


def summary_record(
    label: str, levels: dict[int, dict], d: curves.Curve, capacity: int | None, promise: float | None
) -> dict:
    """The curve-summary record of a label's curve."""
    first = levels[d.levels[0]]
    return CurveSummary(
        label=label,
        run=CurveRun.of(first),
        levels=d.levels,
        knee_between=list(d.knee) if d.knee else None,
        operating_point=d.operating_point,
        peak_output_tokens_per_s=max(LevelStats.read(levels[c]).output_tokens_per_s for c in d.levels),
        tpot_fit_ms=TpotFit(round(d.fit["a_s"] * 1000, 3), round(d.fit["b_s"] * 1000, 4)) if d.fit else None,
        ceiling_tokens_per_s=None if d.ceiling is None else round(d.ceiling, 1),
        c_at_slo=None if d.c_at_slo is None else round(d.c_at_slo, 1),
        capacity_within_promise=capacity,
        promise_s=promise,
        recorded_at=now_stamp(),
        capacity_reading=None if promise is None else curves.capacity_reading(levels, promise).reading,
        spread=tables.spread_rows(levels) or None,
        seat_ceiling_tokens_per_s=round(d.fit["seat_ceiling"], 1)
        if d.fit and d.fit.get("seat_ceiling")
        else None,
        machine=machine_of(first),
    ).to_dict()


def bar(value: float, top: float, width: int = 24) -> str:
    """A text bar: ``value`` as a share of ``top`` in ``width`` cells."""
    cells = 0 if not top > 0 else round(width * min(max(value / top, 0.0), 1.0))
    return "=" * cells + " " * (width - cells) + "|"


def curve_lines(label: str, levels: dict[int, dict], markdown: bool) -> tuple[curves.Curve, list[str]]:
    """A label's curve and its lines: the conditions, the level table with its bars, the knee, the
    TPOT fit and the operating point."""
    d = curves.curve(levels)
    if not d.levels:
        return d, [f"{label}: no level finished a single request, so there is no curve"]
    first, second = tables.conditions_lines(label, levels, d)
    out = [f"==> {first}", f"    {second}"]
    out += [f"    {note}" for note in (tables.runs_note(levels), tables.spread_note(levels)) if note]
    out += _table_lines(d, levels, markdown)
    out += ["", f"    {tables.knee_line(d)}", *(f"    {line}" for line in tables.fit_lines(d, levels))]
    return d, out + [f"    {tables.operating_line(d)}"]


def _table_lines(d: curves.Curve, levels: dict[int, dict], markdown: bool) -> list[str]:
    """The level table and the two bar columns (output tokens/s, TPOT p90)."""
    text = tabulate(
        tables.curve_rows(d, levels),
        headers=tables.CURVE_HEAD,
        tablefmt="github" if markdown else "plain",
        disable_numparse=True,
    )
    peak = max(LevelStats.read(levels[c]).output_tokens_per_s for c in d.levels)
    worst = max(LevelStats.read(levels[c]).tpot_s.p90 or 0 for c in d.levels)
    out = [*text.splitlines(), "", f"    {'c':>5}  {'output tokens/s':<33}{'TPOT p90':<25}"]
    for c in d.levels:
        st = LevelStats.read(levels[c])
        rate, tp = st.output_tokens_per_s, st.tpot_s.p90
        tpot = "-" if tp is None else f"{tp:.4f} s"
        out.append(f"    {c:>5}  {bar(rate, peak)} {rate:<7.1f} {bar(tp or 0, worst, 16)} {tpot}")
    return out


def compare_lines(a: str, b: str, labels: dict) -> list[str]:
    """Two labels side by side at the levels they share, their differences in conditions first."""
    shared = sorted(set(labels[a]) & set(labels[b]))
    if not shared:
        raise ConfigError(f"{a} and {b} share no concurrency level; run both at the same levels")
    text = tabulate(
        tables.compare_rows(labels[a], labels[b], shared), headers=tables.COMPARE_HEAD, disable_numparse=True
    )
    differences = [f"    {line}" for line in tables.differences(labels[a], labels[b], shared)]
    return [*differences, f"==> {a} (A) against {b} (B)", *text.splitlines()]


def admission_records(path: str) -> tuple[list[dict], list[str]]:
    """The notebook's admission recommendations (the track runner writes one per admission step),
    and a warning for each line not read."""
    result = read_records(path, "admission", select=is_admission)
    return result.records, [f"warning: {w}" for w in result.warnings]


def admission_lines(records: list[dict], label: str | None = None) -> list[str]:
    """The latest admission recommendation of each admission label (with ``label``: those chosen
    from that curve, or written under it)."""
    latest = {r.label: r for r in map(AdmissionRecommendation.read, records)}
    shown = [r for r in latest.values() if label is None or label in (r.label, r.source)]
    head = ["==> admission recommendation" + ("s" if len(shown) > 1 else "")] if shown else []
    return head + [f"    {admission.line(rec)}" for rec in shown]


def check_lines(
    labels: dict, admissions: list[dict], known: list[str] | None = None
) -> tuple[int, list[str]]:
    """The lab's validation rules applied to the notebook, with the known findings marked; exit
    status 1 when a rule fails."""
    from harness.measure import known_findings

    results = curves.check(labels, list(load_errors())) + admission.rules(admissions)
    try:
        results = known_findings.apply(results, known_findings.parse(known or []))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    counts = {v: sum(1 for r, _ in results if r == v) for v in ("PASS", "WARN", "FAIL")}
    return 1 if counts["FAIL"] else 0, [
        "==> the lab's validation rules, applied to the notebook",
        *(f"    {verdict:<4}  {text}" for verdict, text in results),
        f"    {counts['PASS']} pass, {counts['WARN']} warn, {counts['FAIL']} fail",
    ]


def label_lines(
    labbook: str, label: str, levels: dict[int, dict], markdown: bool, promise, peak, spares
) -> tuple[curves.Curve, int | None, list[str], list[str]]:
    """One label's whole summary: its curve, the capacity within ``promise`` (None without one),
    the lines in order (curve, admissions, the engine's metrics, falls, workloads, energy,
    capacity) and the warnings of the admission records not read."""
    d, out = curve_lines(label, levels, markdown)
    records, warnings = admission_records(labbook)
    out += admission_lines(records, label) + server_metrics_lines(levels) + falls_lines(label, levels)
    out += workload_lines(levels) + energy_lines(levels)
    capacity = None
    if promise is not None:
        capacity, more = capacity_lines(levels, promise, peak, spares)
        out += more
    return d, capacity, out, warnings
