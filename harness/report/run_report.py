"""The run report (``report.md`` and ``report.html``) and its headline numbers, built from the
notebook's records and the run manifest only (docs/architecture.md, "Contracts").

The headline numbers are ``harness.report.headlines``'s (pure); ``write_report`` reads the run
directory, draws the crowd chart and writes the report as its sections in order (``SECTIONS``:
each a function of one ``RunInputs`` returning Markdown lines), the headline first. The HTML file
is the same Markdown rendered, with the charts embedded, so it can be opened or attached on its
own."""

from __future__ import annotations

import os
from pathlib import Path

from harness.measure import curves
from harness import words
from harness.records.manifest import ENGINE, HOST, MANIFEST, STEP
from harness.records.sizing import Capacity
from harness.records.base import is_level
from harness.records.notebook import read_records
from harness.energy import report_section as energy_section
from harness.report import markdown, measured
from harness.report import lab_records
from harness.report import record_sections as rs
from harness.report import time_series as series_section
from harness.report import workload_tables
from harness.report.curve_tables import said
from harness.report.markdown import absent, table, to_html
from harness.report.headlines import ROW, headline_lines, headlines, operating_text, peak_text, prefix_text
from harness.report.run_inputs import RunInputs


def plan_admissions(plan) -> dict[str, str]:
    """Curve label -> the label of the admission sweep chosen from it."""
    return {
        str(s.options["from"]): str(s.options["label"])
        for s in plan.steps
        if s.kind == "admission" and s.options.get("from") and s.options.get("label")
    }


def plan_pairs(plan) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Curve labels (the summarise step's) and, for each, the prefix pair swept on the same block."""
    curve_labels: list[str] = []
    for s in plan.steps:
        if s.kind == "summarise":
            curve_labels += list(s.options.get("labels", []))
    pairs: dict[str, tuple[str, str]] = {}
    for block_id in plan.blocks:
        sweeps = [
            s for s in plan.steps if s.block is not None and s.block.id == block_id and s.kind == "sweep"
        ]
        unique = [s.options["label"] for s in sweeps if s.options.get("prompt_set") == "unique-prefix"]
        shared = [s.options["label"] for s in sweeps if s.options.get("prompt_set") == "shared-prefix"]
        if unique and shared:
            for s in sweeps:
                if s.options["label"] in curve_labels:
                    pairs[s.options["label"]] = (unique[0], shared[0])
    return curve_labels, pairs


def searches_in(notebook: Path) -> dict[str, Capacity]:
    """label -> the latest capacity record of that label (``harness capacity``)."""
    if not notebook.is_file():
        return {}
    recs = read_records(notebook, Capacity.KIND, select=lambda o: o.get("record") == Capacity.KIND).records
    return {c.label: c for c in map(Capacity.read, recs)}


def levels_in(notebook: Path) -> dict[str, dict[int, dict]]:
    recs = read_records(notebook, "level", select=is_level).records
    return curves.by_label(recs)


def skipped_blocks(manifest: dict) -> list[str]:
    """Optional blocks that did not run here (their engine is not installed), each with its reason."""
    found = [
        f"- `{s[STEP.id].removesuffix('/start')}`: {s.get(STEP.reason) or 'skipped'}"
        for s in manifest[MANIFEST.steps]
        if s[STEP.id].endswith("/start") and s[STEP.status] == "skipped"
    ]
    return ["Blocks skipped on this machine:", "", *found, ""] if found else []


def inputs(run_dir: Path, plan, manifest: dict) -> RunInputs:
    notebook = run_dir / "labbook.md"
    curve_labels, pairs = plan_pairs(plan)
    return RunInputs(
        run_dir=run_dir,
        plan=plan,
        manifest=manifest,
        levels=levels_in(notebook) if notebook.is_file() else {},
        promise=float(plan.variables.get("PROMISE_S", plan.sweep.get("slo_ttft", 2.0))),
        curve_labels=curve_labels,
        pairs=pairs,
    )


def write_report(run_dir: Path, plan, manifest: dict) -> Path:
    """``report.md`` and ``report.html`` in the run directory, from the notebook's records and the
    manifest: the headline, charts, conditions, engines, then one section per kind of record, and
    the steps with their final statuses. Returns the Markdown file's path."""
    r = inputs(run_dir, plan, manifest)
    lines = _title(r)
    for section in SECTIONS:
        lines += section(r)
    text = "\n".join(lines).rstrip() + "\n"
    path = run_dir / "report.md"
    _write_whole(path, text)
    _write_whole(run_dir / "report.html", to_html(text, run_dir, plan.title))
    return path


def _write_whole(path: Path, text: str) -> None:
    """Write beside, then rename over: a report cut by a kill is the old one or none, never half."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def final_status(step: dict) -> tuple[str, str]:
    """A step's status and note as the finished report states them: the report step, still
    running while it writes this file, is the step that wrote it."""
    note = step.get(STEP.reason) or (step.get(STEP.result) or {}).get("why") or ""
    if step.get(STEP.kind) == "report" and step.get(STEP.status) in ("running", "pending"):
        return "passed", "wrote this report (report.md and report.html)"
    return step.get(STEP.status, "pending"), note


def _title(r: RunInputs) -> list[str]:
    statuses = [final_status(s)[0] for s in r.manifest.get(MANIFEST.steps, [])]
    counts = ", ".join(f"{statuses.count(k)} {k}" for k in dict.fromkeys(statuses))
    m = r.manifest
    return [
        f"# {r.plan.title}",
        "",
        *rehearsal_banner(m.get(MANIFEST.rehearsal)),
        f"Plan `{r.plan.path}`" + (f", tier {r.plan.tier}" if r.plan.tier else "") + f"; run directory "
        f"`{r.run_dir}`; started {m[MANIFEST.started]}, report written {m[MANIFEST.updated]}; "
        f"{len(statuses)} steps: {counts or 'none'}.",
        "",
    ]


def rehearsal_banner(rehearsal: dict | None) -> list[str]:
    """A rehearsal's report opens by saying so: every figure below is a CPU stand-in's, and which
    stand-in served each engine of the track."""
    if not rehearsal:
        return []
    rows = [[name, s["stand_in"], s["real"]] for name, s in rehearsal["stand_ins"].items()]
    ignored = [f"- {name}: {x}" for name, s in rehearsal["stand_ins"].items() for x in s.get("ignored", [])]
    cut = [f"- {block}: {why}" for block, why in (rehearsal.get("left_out") or {}).items()]
    size = rehearsal.get("size", "quick")
    return [
        f"> **REHEARSAL, not {rehearsal['stands_for']}.** This track's own plan ran on this machine's "
        "CPU with stand-ins for every accelerator-only part"
        + (f" at the overlay's {rehearsal.get('size', 'quick')} sizes" if rehearsal.get("quick") else "")
        + f" (overlay `{rehearsal['overlay']}`). None of the figures below is the track's hardware "
        "figure: they prove the plan runs, not what the hardware does.",
        "",
        table(["engine in the plan", "stand-in here", "on the track's hardware"], rows),
        "",
        *(["What the stand-ins refuse, ignore or add:", "", *ignored, ""] if ignored else []),
        *(
            [f"Blocks of the plan left out at the {size} size (their path runs elsewhere):", "", *cut, ""]
            if cut
            else []
        ),
    ]


def headline(r: RunInputs) -> list[str]:
    """The headline table: one row per summarised curve."""
    lines = ["## Headline", ""]
    searches = searches_in(r.notebook)
    rows = headlines(r.levels, r.curve_labels, r.pairs, r.promise, plan_admissions(r.plan), searches)
    if not rows:
        why = "the plan's summarise steps name no label" if not r.curve_labels else r.why_none("sweep")
        return lines + absent("No curve was measured", why)
    body = []
    for x in rows:
        body.append(
            [
                x[ROW.label],
                said(x[ROW.engine]),
                peak_text(x),
                x[ROW.knee].replace("->", " -> "),
                operating_text(x) if x[ROW.operating_point] else "no level qualifies",
                x[ROW.capacity].text,
                x[ROW.admission] or "no admission step",
                prefix_text(x[ROW.prefix]),
            ]
        )
    head = [
        "curve",
        "engine",
        "peak output tok/s",
        "knee",
        "operating point (goodput objective)",
        f"capacity within the promise ({r.promise:g} s p95 TTFT)",
        "admission level",
        "prefix caching: TTFT p50 without -> with the shared prefix",
    ]
    return lines + [table(head, body), ""]


def charts(r: RunInputs) -> list[str]:
    """The crowd chart of every summarised curve (each curve's TPOT chart sits with its curve)."""
    from harness.report.charts import crowd_chart, pareto_chart

    lines = ["## Throughput and first-token wait against crowd size", ""]
    shown = {label: r.levels[label] for label in r.curve_labels if r.levels.get(label)}
    if not any(curves.completed_levels(lv) for lv in shown.values()):
        return lines + absent("No chart", "no summarised curve finished a level")
    chart = crowd_chart(shown, r.run_dir / "charts" / "crowd.png", r.promise)
    pareto = pareto_chart(shown, r.run_dir / "charts" / "pareto.png")
    return lines + [
        f"![total output and p95 first-token wait against crowd size]({chart.relative_to(r.run_dir)})",
        "",
        "Per-user output (1 / TPOT p50) against total output, one point per crowd size: moving right "
        "along a line buys total throughput with each person's speed.",
        "",
        f"![per-user against total output tokens/s]({pareto.relative_to(r.run_dir)})",
        "",
    ]


def energy(r: RunInputs) -> list[str]:
    """The energy section of the summarised curves (harness.energy.report_section), its chart drawn here."""
    shown = {label: r.levels[label] for label in r.curve_labels if r.levels.get(label)}

    def draw(measured: dict) -> str:
        from harness.report.charts import energy_chart  # matplotlib only where a chart is drawn

        return str(energy_chart(measured, r.run_dir / "charts" / "energy.png").relative_to(r.run_dir))

    return energy_section.section(shown, draw, markdown)


def time_series(r: RunInputs) -> list[str]:
    """The server's and the client's time series of the summarised curves, their charts drawn here."""
    shown = {label: r.levels[label] for label in r.curve_labels if r.levels.get(label)}

    def draw(label: str, records: list[dict]) -> str:
        from harness.report.charts import rehearsal_mark, series_chart  # matplotlib only where drawn

        path = r.run_dir / "charts" / f"{label}-server-client.png"
        return str(series_chart(label, records, path, rehearsal_mark(records)).relative_to(r.run_dir))

    return series_section.section(shown, draw)


def conditions(r: RunInputs) -> list[str]:
    plan, host = r.plan, r.manifest.get(MANIFEST.host) or {}
    sweep = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in plan.sweep.items())
    return [
        "## Test conditions",
        "",
        f"- Machine: {plan.variables.get('HOST_DESC', 'not stated in the plan')} "
        f"({said(host.get(HOST.system))}, {said(host.get(HOST.cpus))} CPUs)",
        f"- Promise for capacity: p95 TTFT within {r.promise:g} s; objective for goodput and the operating "
        f"point: TTFT <= {plan.sweep.get('slo_ttft', 2.0)} s and TPOT <= {plan.sweep.get('slo_tpot', 0.1)} s "
        "(p90)",
        "- Load: closed loop (each simulated user sends its next request when the last one finishes); sweep "
        f"options {sweep or 'as each step states'}",
        "",
    ]


def engines(r: RunInputs) -> list[str]:
    """Each engine block: engine, version and its one change in a table, then its command line."""
    started = r.manifest.get(MANIFEST.engines, {})
    rows = [
        [bid, e[ENGINE.engine], e.get(ENGINE.version), words.change_text(e.get(ENGINE.changed))]
        for bid, e in started.items()
    ]
    lines = ["## Engines", ""]
    if not rows:
        lines += absent(
            "No engine was started", r.why_none("start") if r.steps_of("start") else "this run started none"
        )
    else:
        lines += [
            "One at a time, each started with every setting stated:",
            "",
            table(["block", "engine", "version", "one change"], rows),
            "",
            "Their command lines:",
            "",
            *(f"- {bid}: `{e[ENGINE.command]}`" for bid, e in started.items()),
            "",
            *lab_records.log_lines(started),
            *lab_records.release_lines(started),
        ]
    return lines + skipped_blocks(r.manifest)


def _step_rows(steps: list[dict]) -> list[list]:
    """One row per step; a run of skipped steps of one block with one reason is one row."""
    rows: list[list] = []
    for s in steps:
        status, note = final_status(s)
        block = s[STEP.id].split("/")[0] if "/" in s[STEP.id] else None
        seconds = "—" if s.get(STEP.duration_s) is None else f"{s[STEP.duration_s]:.1f}"
        last = rows[-1] if rows else None
        if last and status == "skipped" and last[4] == (block, status, note) and block is not None:
            last[5] += 1
            last[0] = f"{last[6]} … {s[STEP.id]} ({last[5]} steps)"
            continue
        rows.append([s[STEP.id], status, seconds, note, (block, status, note), 1, s[STEP.id]])
    return [row[:4] for row in rows]


def steps(r: RunInputs) -> list[str]:
    return [
        "## Steps",
        "",
        table(["step", "status", "seconds", "note"], _step_rows(r.manifest.get(MANIFEST.steps, []))),
        "",
    ]


# The report, in order: the customer-facing part first, then the course's lab sections under their
# own heading. A new section is a function of RunInputs returning Markdown lines, added here.
SECTIONS = (
    headline,
    charts,
    energy,  # power, J per token and cost per level; an imitation's labelled
    time_series,  # the server's /metrics and the client's figures at the same instants
    conditions,
    engines,
    rs.allocation,
    lab_records.fraction_section,
    rs.curve_section,
    rs.capacity_searches,
    lab_records.admission_section,
    workload_tables.section,  # bursts, lengths, conversations, traces (none for the labs' own sweeps)
    rs.comparisons,
    rs.single_user,
    lab_records.environments_section,
    rs.cross_check,
    rs.lab_heading,
    rs.demoted(lambda r: measured.section(r.notebook, r.plan)),  # measured against what bandwidth allows
    rs.demoted(rs.validation),
    steps,
)


def finished_lines(run_dir: Path, plan) -> list[str]:
    """What a finished track run prints: its headline numbers and where its report, charts,
    notebook and manifest are ([] when it wrote no report)."""
    report = run_dir / "report.md"
    if not report.is_file():
        return []
    curve_labels, pairs = plan_pairs(plan)
    promise = float(plan.variables.get("PROMISE_S", plan.sweep.get("slo_ttft", 2.0)))
    notebook = run_dir / "labbook.md"
    found = headlines(
        levels_in(notebook), curve_labels, pairs, promise, plan_admissions(plan), searches_in(notebook)
    )
    return [
        "\n==> headline numbers",
        *(f"    {line}" for line in headline_lines(found, promise)),
        f"\n    report:   {report} (one file to open or attach: {report.with_suffix('.html')})"
        f"\n    charts:   {run_dir / 'charts'}"
        f"\n    notebook: {notebook}"
        f"\n    manifest: {run_dir / 'manifest.json'}",
    ]
