"""``harness summarise``: curves, comparisons and the validation check, a drop-in for the lab's
summarise-load.py (same options), plus capacity within a promise, copies for a peak and charts."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from numbers import Real

from tabulate import tabulate

from harness.core import admission, bounds, curves, sizing
from harness.core.server_text import printable
from harness.errors import ConfigError
from harness.core.records import CurveSummary, is_admission, is_level
from harness.io.clock import now_stamp
from harness.io.notebook import append_record, read_records
from harness.report import curve_tables as tables
from harness.report.troubleshooting import load_errors
from harness import options
from harness.options.record import LABEL
from harness.options.shared import LAB_CHECK, LABBOOK
from harness.options.sizing import PEAK, PROMISE, SPARES


def add_parser(sub) -> None:
    p = sub.add_parser(
        "summarise", help="curves, comparisons and checks from the notebook (drop-in for summarise-load.py)"
    )
    options.to_argparse(p, LABBOOK, command="summarise")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the labels in the notebook")
    options.to_argparse(what, LABEL, command="summarise")
    what.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two labels level by level")
    options.to_argparse(what, LAB_CHECK, command="summarise")
    p.add_argument(
        "--known-failure",
        action="append",
        default=[],
        metavar="LABEL=WHY",
        help="with --check: a FAIL about this label is a WARN saying why (a rehearsal stand-in's, "
        "stated in its overlay)",
    )
    p.add_argument("--markdown", action="store_true", help="print the curve table as Markdown")
    p.add_argument("--record", action="store_true", help="with --label, append a curve-summary record")
    options.to_argparse(p, PROMISE, command="summarise")
    options.to_argparse(p, PEAK, command="summarise")
    options.to_argparse(p, SPARES, command="summarise")
    p.add_argument(
        "--chart",
        metavar="PNG",
        help="draw total output and p95 first-token wait against crowd size (for --label or --compare), "
        "and beside it NAME-pareto.png: per-user against total output tokens/s",
    )
    p.add_argument("--tpot-chart", metavar="PNG", help="with --label: TPOT against concurrency with the fit")
    p.set_defaults(func=run)


class _Printable(io.TextIOBase):
    """Standard output with every line made terminal-safe (``printable``): a notebook is a file
    anyone may have edited, and its labels, engines and hosts are printed as they are written."""

    def __init__(self, out) -> None:
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def load(path: str) -> dict[str, dict[int, dict]]:
    result = read_records(path, "level", select=is_level)
    for warning in result.warnings:
        print(printable(f"warning: {warning}"), file=sys.stderr)
    kept = []
    for record in result.records:
        bad, broken = negative_figure(record), line_break(record)
        where = f"label {record.get('label')!r} at c={record.get('concurrency')}"
        if bad:
            print(printable(f"warning: {path}: {where}: {bad} is negative; record skipped"), file=sys.stderr)
        elif broken:  # printed, it would start a line of its own (a forged PASS line, say)
            print(
                printable(f"warning: {path}: {where}: {broken} holds a line break; record skipped"),
                file=sys.stderr,
            )
        else:
            kept.append(record)
    return curves.by_label(kept)


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


def _missing(label: str, labels: dict) -> ConfigError:
    return ConfigError(
        f"no records for label {label!r}; labels present: {', '.join(sorted(labels)) or 'none'}"
    )


def run(args) -> int:
    with redirect_stdout(_Printable(sys.stdout)):
        return _run(args)


def _run(args) -> int:
    bounds.sizing(args.promise, args.peak, args.spares)
    labels = load(args.labbook)
    if args.list:
        code = print_list(labels, args.labbook)
        print_admissions(args.labbook)
        return code
    if args.check:
        return print_check(labels, admission_records(args.labbook), args.known_failure)
    if args.compare:
        return run_compare(args, labels)
    if args.label not in labels:
        raise _missing(args.label, labels)
    levels = labels[args.label]
    d = print_curve(args.label, levels, args.markdown)
    print_admissions(args.labbook, args.label)
    print_server_metrics(levels)
    print_falls(args.label, levels)
    print_workloads(levels)
    print_energy(levels)
    capacity = print_capacity(args, levels) if args.promise is not None else None
    if args.chart:
        draw_charts({args.label: levels}, args.chart, args.promise)
    if args.tpot_chart:
        from harness.report.charts import tpot_chart

        print(f"    chart: {tpot_chart(args.label, levels, d.fit, args.tpot_chart)}")
    if args.record and d.levels:
        record_summary(args, levels, d, capacity)
    return 0


def print_server_metrics(levels: dict[int, dict]) -> None:
    """Per level, the engine's own /metrics: queue peaks, llama.cpp's batch per decode call, vLLM's
    KV pool used, the cached shares; then the batch achieved and the admission limit in words."""
    from harness.core import server_metrics

    head, rows = server_metrics.table(levels)
    if not rows:
        return
    print("\n    the engine's own /metrics per level:")
    text = tabulate(rows, headers=head, disable_numparse=True)
    print("\n".join("    " + line for line in text.splitlines()))
    for note in server_metrics.use_notes(levels):
        print(f"    {note}")


def print_falls(label: str, levels: dict[int, dict]) -> None:
    """Each fall in output tokens/s between neighbouring levels, as the check and the report name it:
    past the run-to-run noise, past saturation (a warning); within it, noise (a note)."""
    from harness.core import server_metrics

    for _, text in server_metrics.level_findings(label, levels):
        print(f"    warning: {text}")
    for text in server_metrics.noise_notes(levels):
        print(f"    note: throughput held: {text}")


def print_energy(levels: dict[int, dict]) -> None:
    """Per level, its power, J per output token, output tokens per J and cost; then the operating
    point's (nothing for a curve whose sweeps read no telemetry and had no price)."""
    from harness.energy import tables as energy_tables

    if not energy_tables.measured(levels):
        return
    marks = energy_tables.labels(levels)
    said = f" ({', '.join(m.upper() for m in marks)}: made up, not measured)" if marks else ""
    print(f"\n    energy and cost per level{said}:")
    text = tabulate(
        energy_tables.energy_rows(levels), headers=energy_tables.ENERGY_HEAD, disable_numparse=True
    )
    print("\n".join("    " + line for line in text.splitlines()))
    point = energy_tables.operating_energy_line(levels)
    if point:
        print(f"    {point}")


def print_workloads(levels: dict[int, dict]) -> None:
    """The label's workload table and per-turn tables, for levels beyond the prompt sets."""
    from harness.report import workload_tables

    lines = workload_tables.markdown([levels[c] for c in sorted(levels)])
    if lines:
        print()
        print("\n".join("    " + line if line else "" for line in "\n".join(lines).splitlines()))


def print_list(labels: dict[str, dict[int, dict]], labbook: str) -> int:
    rows = [
        [
            name,
            r.get("engine", "?"),
            r.get("prompt_set", "?"),
            ",".join(map(str, sorted(lv))),
            r.get("recorded_at", "?"),
        ]
        for name, lv in labels.items()
        for r in [lv[max(lv)]]
    ]
    print(f"==> {len(labels)} label(s) in {labbook}")
    print(tabulate(rows, headers=["label", "engine", "prompt set", "levels", "last recorded"]))
    return 0


def run_compare(args, labels: dict[str, dict[int, dict]]) -> int:
    a, b = args.compare
    for name in (a, b):
        if name not in labels:
            raise _missing(name, labels)
    code = print_compare(a, b, labels)
    if args.chart:
        draw_charts({a: labels[a], b: labels[b]}, args.chart, args.promise)
    return code


def draw_charts(shown: dict[str, dict[int, dict]], path: str, promise: float | None) -> None:
    """The crowd chart at ``path`` and the Pareto chart beside it (``<name>-pareto.png``)."""
    from pathlib import Path

    from harness.report.charts import crowd_chart, pareto_chart

    print(f"    chart: {crowd_chart(shown, path, promise)}")
    beside = Path(path).with_name(Path(path).stem + "-pareto.png")
    print(f"    Pareto chart (per-user against total output tok/s): {pareto_chart(shown, beside)}")


def print_capacity(args, levels: dict[int, dict]) -> int | None:
    """How many people at once get a first token within the promise (never more than the levels
    show: "at least" when the top level kept it), and copies for a peak."""
    found = curves.capacity_reading(levels, args.promise)
    print(f"    {tables.capacity_line(levels, args.promise)}")
    capacity = found.capacity
    if not capacity:
        return capacity
    for line in sizing.alone_against_capacity(levels, capacity):
        print(f"    {line}")
    if args.peak:
        need, spare = curves.copies_for(args.peak, capacity, args.spares)
        bound = "" if found.reading == "exact" else " (at most: the capacity is a lower bound)"
        print(
            f"    a peak of {args.peak} needs {args.peak} / {capacity} -> {need} copies, {spare} with "
            f"{args.spares:.0%} spares{bound}"
        )
    return capacity


def record_summary(args, levels: dict[int, dict], d: curves.Curve, capacity: int | None) -> None:
    first = levels[d.levels[0]]
    rec = CurveSummary(
        label=args.label,
        run=first,
        levels=d.levels,
        knee_between=list(d.knee) if d.knee else None,
        operating_point=d.operating_point,
        peak_output_tokens_per_s=max(levels[c]["output_tokens_per_s"] for c in d.levels),
        tpot_fit_ms=(
            {"a": round(d.fit["a_s"] * 1000, 3), "b": round(d.fit["b_s"] * 1000, 4)} if d.fit else None
        ),
        ceiling_tokens_per_s=None if d.ceiling is None else round(d.ceiling, 1),
        c_at_slo=None if d.c_at_slo is None else round(d.c_at_slo, 1),
        capacity_within_promise=capacity,
        promise_s=args.promise,
        recorded_at=now_stamp(),
        capacity_reading=None
        if args.promise is None
        else curves.capacity_reading(levels, args.promise).reading,
        spread=tables.spread_rows(levels) or None,
        seat_ceiling_tokens_per_s=round(d.fit["seat_ceiling"], 1)
        if d.fit and d.fit.get("seat_ceiling")
        else None,
    )
    append_record(args.labbook, rec.to_dict(), "curve-summary")
    print(f"    appended a curve-summary record for {args.label} to {args.labbook}")


def bar(value: float, top: float, width: int = 24) -> str:
    """A text bar: ``value`` as a share of ``top`` in ``width`` cells."""
    cells = 0 if not top > 0 else round(width * min(max(value / top, 0.0), 1.0))
    return "=" * cells + " " * (width - cells) + "|"


def print_curve(label: str, levels: dict[int, dict], markdown: bool) -> curves.Curve:
    d = curves.curve(levels)
    if not d.levels:
        print(f"{label}: no level finished a single request, so there is no curve")
        return d
    first, second = tables.conditions_lines(label, levels, d)
    print(f"==> {first}")
    print(f"    {second}")
    for note in (tables.runs_note(levels), tables.spread_note(levels)):
        if note:
            print(f"    {note}")
    _print_table(d, levels, markdown)
    print()
    print(f"    {tables.knee_line(d)}")
    for line in tables.fit_lines(d, levels):
        print(f"    {line}")
    print(f"    {tables.operating_line(d)}")
    return d


def _print_table(d: curves.Curve, levels: dict[int, dict], markdown: bool) -> None:
    """The level table and the two bar columns (output tokens/s, TPOT p90)."""
    print(
        tabulate(
            tables.curve_rows(d, levels),
            headers=tables.CURVE_HEAD,
            tablefmt="github" if markdown else "plain",
            disable_numparse=True,
        )
    )
    peak = max(levels[c]["output_tokens_per_s"] for c in d.levels)
    worst = max(levels[c]["tpot_s"].get("p90") or 0 for c in d.levels)
    print(f"\n    {'c':>5}  {'output tokens/s':<33}{'TPOT p90':<25}")
    for c in d.levels:
        out, tp = levels[c]["output_tokens_per_s"], levels[c]["tpot_s"].get("p90")
        tpot = "-" if tp is None else f"{tp:.4f} s"
        print(f"    {c:>5}  {bar(out, peak)} {out:<7.1f} {bar(tp or 0, worst, 16)} {tpot}")


def print_compare(a: str, b: str, labels: dict) -> int:
    shared = sorted(set(labels[a]) & set(labels[b]))
    if not shared:
        raise ConfigError(f"{a} and {b} share no concurrency level; run both at the same levels")
    for line in tables.differences(labels[a], labels[b], shared):
        print(f"    {line}")
    print(f"==> {a} (A) against {b} (B)")
    print(
        tabulate(
            tables.compare_rows(labels[a], labels[b], shared),
            headers=tables.COMPARE_HEAD,
            disable_numparse=True,
        )
    )
    return 0


def admission_records(path: str) -> list[dict]:
    """The notebook's admission recommendations (the track runner writes one per admission step)."""
    result = read_records(path, "admission", select=is_admission)
    for warning in result.warnings:
        print(printable(f"warning: {warning}"), file=sys.stderr)
    return result.records


def print_admissions(path: str, label: str | None = None) -> None:
    """The latest admission recommendation of each admission label (with ``label``: those chosen
    from that curve, or written under it)."""
    latest = {r["label"]: r for r in admission_records(path)}
    shown = [r for r in latest.values() if label is None or label in (r["label"], r["from"])]
    if shown:
        print("==> admission recommendation" + ("s" if len(shown) > 1 else ""))
    for rec in shown:
        print(f"    {admission.line(rec)}")


def print_check(labels: dict, admissions: list[dict] | None = None, known: list[str] | None = None) -> int:
    from harness.core import known_findings

    print("==> the lab's validation rules, applied to the notebook")
    results = curves.check(labels, list(load_errors())) + admission.rules(admissions or [])
    try:
        results = known_findings.apply(results, known_findings.parse(known or []))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for verdict, text in results:
        print(f"    {verdict:<4}  {text}")
    counts = {v: sum(1 for r, _ in results if r == v) for v in ("PASS", "WARN", "FAIL")}
    print(f"    {counts['PASS']} pass, {counts['WARN']} warn, {counts['FAIL']} fail")
    return 1 if counts["FAIL"] else 0
