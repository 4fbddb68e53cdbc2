"""The run report (``report.md`` and ``report.html``) and its headline numbers, built from the
notebook's records and the run manifest only (docs/architecture.md, "Contracts").

``headlines`` is pure; ``write_report`` reads the run directory, draws the crowd chart and writes
the report as its sections in order (``SECTIONS``: each a function of one ``RunInputs`` returning
Markdown lines), the headline first. The HTML file is the same Markdown rendered, with the charts
embedded, so it can be opened or attached on its own."""

from __future__ import annotations

from pathlib import Path

from harness.core import curves, words
from harness.core.records import is_level
from harness.io.notebook import read_records
from harness.report import measured
from harness.report import lab_records
from harness.report import record_sections as rs
from harness.report import workload_tables
from harness.report.curve_tables import said
from harness.report.markdown import absent, table, to_html
from harness.report.record_sections import RunInputs


def _p(rec: dict | None, key: str, pct: str) -> float | None:
    return None if rec is None else (rec.get(key) or {}).get(pct)


def prefix_change(unique: dict[int, dict], shared: dict[int, dict]) -> dict | None:
    """TTFT p50 without and with a shared prefix at the lowest level both ran, and the cached share."""
    both = sorted(set(unique) & set(shared))
    if not both:
        return None
    c = both[0]
    before, after = _p(unique[c], "ttft_s", "p50"), _p(shared[c], "ttft_s", "p50")
    if before is None or after is None:
        return None
    return {
        "c": c,
        "ttft_unique_s": before,
        "ttft_shared_s": after,
        "change": (after - before) / before if before else None,
        "cached_share": curves.cached_share(shared[c]),
    }


def headlines(
    levels_by_label: dict[str, dict[int, dict]],
    curve_labels: list[str],
    pairs: dict[str, tuple[str, str]],
    promise_s: float,
    admissions: dict[str, str] | None = None,
    searches: dict[str, dict] | None = None,
) -> list[dict]:
    """One row per curve: peak output tokens/s (and its range when that level was repeated), knee,
    operating point, capacity within the promise as the levels show it (exact, at least, none),
    the admission level's outcome against the promise, and the prefix-caching TTFT change of the
    pair run on the same server."""
    rows = []
    for label in curve_labels:
        levels = levels_by_label.get(label)
        if not levels:
            continue
        d = curves.curve(levels)
        if not d.levels:
            continue
        first = levels[d.levels[0]]
        pair = pairs.get(label)
        change = (
            prefix_change(levels_by_label.get(pair[0], {}), levels_by_label.get(pair[1], {}))
            if pair
            else None
        )
        peak_c = max(d.levels, key=lambda c: levels[c]["output_tokens_per_s"])
        admitted = (admissions or {}).get(label)
        rows.append(
            {
                "label": label,
                "engine": first.get("engine"),
                "peak_tok_s": levels[peak_c]["output_tokens_per_s"],
                "peak_range": curves.spread_of(levels[peak_c], "output_tokens_per_s"),
                "knee": f"{d.knee[0]}->{d.knee[1]}" if d.knee else "none",
                "operating_point": d.operating_point,
                "operating_is_top": d.operating_point == d.levels[-1],
                "capacity": curves.capacity_reading(levels, promise_s),
                "admission": admission_outcome(
                    levels_by_label.get(admitted, {}), promise_s, (searches or {}).get(admitted)
                )
                if admitted
                else None,
                "prefix": change,
            }
        )
    return rows


def admission_outcome(levels: dict[int, dict], promise_s: float, search: dict | None = None) -> str:
    """The admission level's outcome in words: its crowd, p95 TTFT against the promise and by how
    much, and how many requests met the goodput objective; why not, when it did not run. When the
    level was found by ``harness capacity`` (``search``), that level and the search's answer."""
    done = curves.completed_levels(levels)
    if not done:
        return "not run"
    c = done[-1]
    if search is not None:
        if search.get("capacity") not in levels:
            return f"capacity search: {search['answer']}"
        c = search["capacity"]
    rec = levels[c]
    p95 = _p(rec, "ttft_s", "p95")
    if p95 is None:
        verdict = "no p95 TTFT measured"
    elif p95 <= promise_s and not rec["failed"]:
        verdict = (
            f"within the {promise_s:g} s promise (p95 TTFT {p95:.2f} s, {promise_s - p95:.2f} s to spare)"
        )
    else:
        over = (
            f"p95 TTFT {p95:.2f} s, {p95 - promise_s:.2f} s over"
            if p95 > promise_s
            else f"p95 TTFT {p95:.2f} s"
        )
        failed = f", {rec['failed']} failed" if rec["failed"] else ""
        verdict = f"breaks the {promise_s:g} s promise ({over}{failed})"
    prompts = f" ({rec['prompt_set']})" if rec.get("prompt_set") else ""
    good = f"{rec.get('within_slo', 0)}/{rec['completed']}"
    found = f" (capacity search: {search['answer']})" if search else ""
    return f"c={c}{prompts}{found}: {verdict}; {good} within the goodput objective"


def _peak_text(r: dict) -> str:
    span = r.get("peak_range")
    return f"{r['peak_tok_s']:.1f}" + (f" (range {span[0]:.1f}-{span[1]:.1f})" if span else "")


def _operating_text(r: dict) -> str:
    if not r["operating_point"]:
        return "none"
    return f"c={r['operating_point']}" + (" (top level measured)" if r["operating_is_top"] else "")


def prefix_text(pre: dict | None) -> str:
    """The prefix pair's effect in words: TTFT p50 without and with the shared prefix, the change
    and the cached share (each only where it was measured)."""
    if pre is None:
        return "no prefix pair in this run"
    text = f"{pre['ttft_unique_s']:.3f} -> {pre['ttft_shared_s']:.3f} s at c={pre['c']}"
    notes = [f"{pre['change']:+.0%}"] if pre["change"] is not None else []
    if pre["cached_share"] is not None:
        notes.append(f"{pre['cached_share']:.0%} of the prompt cached")
    return text + (f" ({', '.join(notes)})" if notes else "")


def headline_lines(rows: list[dict], promise_s: float) -> list[str]:
    """The headline rows as the lines ``harness track`` prints at the end of a run."""
    return [
        f"{r['label']} ({said(r['engine'])}): peak {_peak_text(r)} tok/s, knee {r['knee']}, "
        f"operating point {_operating_text(r)}, "
        f"capacity within the promise of {promise_s:g} s p95 TTFT: {r['capacity'].text}; "
        + (f"admission {r['admission']}; " if r.get("admission") else "")
        + "prefix caching: "
        + ("no pair" if r["prefix"] is None else f"TTFT p50 {prefix_text(r['prefix'])}")
        for r in rows
    ]


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


def searches_in(notebook: Path) -> dict[str, dict]:
    """label -> the latest capacity record of that label (``harness capacity``)."""
    if not notebook.is_file():
        return {}
    recs = read_records(notebook, "capacity", select=lambda o: o.get("record") == "capacity").records
    return {c["label"]: c for c in recs}


def levels_in(notebook: Path) -> dict[str, dict[int, dict]]:
    recs = read_records(notebook, "level", select=is_level).records
    return curves.by_label(recs)


def skipped_blocks(manifest: dict) -> list[str]:
    """Optional blocks that did not run here (their engine is not installed), each with its reason."""
    found = [
        f"- `{s['id'].removesuffix('/start')}`: {s.get('reason') or 'skipped'}"
        for s in manifest["steps"]
        if s["id"].endswith("/start") and s["status"] == "skipped"
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
    path.write_text(text, encoding="utf-8")
    (run_dir / "report.html").write_text(to_html(text, run_dir, plan.title), encoding="utf-8")
    return path


def final_status(step: dict) -> tuple[str, str]:
    """A step's status and note as the finished report states them: the report step, still
    running while it writes this file, is the step that wrote it."""
    note = step.get("reason") or (step.get("result") or {}).get("why") or ""
    if step.get("kind") == "report" and step.get("status") in ("running", "pending"):
        return "passed", "wrote this report (report.md and report.html)"
    return step.get("status", "pending"), note


def _title(r: RunInputs) -> list[str]:
    statuses = [final_status(s)[0] for s in r.manifest.get("steps", [])]
    counts = ", ".join(f"{statuses.count(k)} {k}" for k in dict.fromkeys(statuses))
    m = r.manifest
    return [
        f"# {r.plan.title}",
        "",
        *rehearsal_banner(m.get("rehearsal")),
        f"Plan `{r.plan.path}`" + (f", tier {r.plan.tier}" if r.plan.tier else "") + f"; run directory "
        f"`{r.run_dir}`; started {m['started']}, report written {m['updated']}; "
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
    return [
        f"> **REHEARSAL, not {rehearsal['stands_for']}.** This track's own plan ran on this machine's "
        "CPU with stand-ins for every accelerator-only part"
        + (" at the overlay's quick sizes" if rehearsal.get("quick") else "")
        + f" (overlay `{rehearsal['overlay']}`). None of the figures below is the track's hardware "
        "figure: they prove the plan runs, not what the hardware does.",
        "",
        table(["engine in the plan", "stand-in here", "on the track's hardware"], rows),
        "",
        *(["What the stand-ins refuse, ignore or add:", "", *ignored, ""] if ignored else []),
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
                x["label"],
                said(x["engine"]),
                _peak_text(x),
                x["knee"].replace("->", " -> "),
                _operating_text(x) if x["operating_point"] else "no level qualifies",
                x["capacity"].text,
                x["admission"] or "no admission step",
                prefix_text(x["prefix"]),
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


def conditions(r: RunInputs) -> list[str]:
    plan, host = r.plan, r.manifest.get("host") or {}
    sweep = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in plan.sweep.items())
    return [
        "## Test conditions",
        "",
        f"- Machine: {plan.variables.get('HOST_DESC', 'not stated in the plan')} "
        f"({said(host.get('system'))}, {said(host.get('cpus'))} CPUs)",
        f"- Promise for capacity: p95 TTFT within {r.promise:g} s; objective for goodput and the operating "
        f"point: TTFT <= {plan.sweep.get('slo_ttft', 2.0)} s and TPOT <= {plan.sweep.get('slo_tpot', 0.1)} s "
        "(p90)",
        "- Load: closed loop (each simulated user sends its next request when the last one finishes); sweep "
        f"options {sweep or 'as each step states'}",
        "",
    ]


def engines(r: RunInputs) -> list[str]:
    """Each engine block: engine, version and its one change in a table, then its command line."""
    started = r.manifest.get("engines", {})
    rows = [
        [bid, e["engine"], e.get("version"), words.change_text(e.get("changed"))]
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
            *(f"- {bid}: `{e['command']}`" for bid, e in started.items()),
            "",
            *lab_records.log_lines(started),
        ]
    return lines + skipped_blocks(r.manifest)


def _step_rows(steps: list[dict]) -> list[list]:
    """One row per step; a run of skipped steps of one block with one reason is one row."""
    rows: list[list] = []
    for s in steps:
        status, note = final_status(s)
        block = s["id"].split("/")[0] if "/" in s["id"] else None
        seconds = "—" if s.get("duration_s") is None else f"{s['duration_s']:.1f}"
        last = rows[-1] if rows else None
        if last and status == "skipped" and last[4] == (block, status, note) and block is not None:
            last[5] += 1
            last[0] = f"{last[6]} … {s['id']} ({last[5]} steps)"
            continue
        rows.append([s["id"], status, seconds, note, (block, status, note), 1, s["id"]])
    return [row[:4] for row in rows]


def steps(r: RunInputs) -> list[str]:
    return [
        "## Steps",
        "",
        table(["step", "status", "seconds", "note"], _step_rows(r.manifest.get("steps", []))),
        "",
    ]


# The report, in order: the customer-facing part first, then the course's lab sections under their
# own heading. A new section is a function of RunInputs returning Markdown lines, added here.
SECTIONS = (
    headline,
    charts,
    conditions,
    engines,
    rs.allocation,
    lab_records.fraction_section,
    rs.curve_section,
    rs.capacity_searches,
    workload_tables.section,  # bursts, lengths, conversations, traces (none for the labs' own sweeps)
    rs.comparisons,
    rs.single_user,
    rs.cross_check,
    rs.lab_heading,
    rs.demoted(lambda r: measured.section(r.notebook, r.plan)),  # measured against what bandwidth allows
    rs.demoted(rs.validation),
    steps,
)
