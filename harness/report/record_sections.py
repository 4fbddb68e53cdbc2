"""The run report's sections that come from the notebook's records: allocation, curves,
comparisons, single-user speed and features, the cross-check and the validation rules.

Each section is a function of one ``RunInputs`` (``run_inputs``) returning Markdown lines; a
section with nothing to show returns one line saying why (``markdown.absent``), never an empty
heading."""

from __future__ import annotations

from collections.abc import Callable

from harness.records.engine import Allocation
from harness.records.manifest import MANIFEST, STEP
from harness.records.sizing import Capacity
from harness.records.labels import file_label
from harness.measure import curves
from harness.engines import trtllm_log
from harness.records.level import LEVEL
from harness.records.base import FIGURES, CrossCheck, is_engine_speed, is_features
from harness.report import curve_tables as ct
from harness.energy import engine_tables as engine_energy
from harness.report import engine_tables, server_counters
from harness.report.troubleshooting import load_errors
from harness.report.markdown import absent, table
from harness.report.run_inputs import RunInputs


def _mib(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} MiB"


def allocation(r: RunInputs) -> list[str]:
    """What each engine's log allocated against the prediction for the same settings."""
    recs = [
        Allocation.read(o) for o in r.records(Allocation.KIND, lambda o: o.get("record") == Allocation.KIND)
    ]
    lines = ["## Allocation against the prediction", ""]
    if not recs:
        return lines + absent("No allocation was checked", r.why_none("verify-allocation"))
    rows = []
    for a in recs:
        st, pred, seen = a.settings or {}, a.predicted or {}, a.observed or {}
        slots, ctx, kv = st.get("slots"), st.get("ctx_per_slot"), st.get("kv_bytes")
        stated = [
            f"{slots} x {ctx:,} tokens" if slots and ctx else None,
            st.get("cache_type"),
            f"KV {kv / 2**30:.2f} GiB" if kv else None,
            f"KV cap {st['kv_max_tokens']:,} tokens" if st.get("kv_max_tokens") else None,
        ]
        settings = ", ".join(x for x in stated if x)
        if a.engine == "trtllm":
            cap, got = pred.get("kv_max_tokens"), trtllm_log.pool_tokens(seen)
            want = "—" if cap is None else f"at most {cap:,} tokens"
            got = "—" if got is None else f"{got:,} tokens"
        elif pred.get("vllm_tokens") is not None:
            want, got = f"{pred['vllm_tokens']:,} tokens", seen.get("kv_tokens")
            got = "—" if got is None else f"{got:,} tokens"
        else:
            pool = pred.get("pool_bytes")
            want = _mib(None if pool is None else pool / 2**20)
            caches = seen.get("kv_caches") or []
            got = _mib(sum(c["mib"] for c in caches)) if caches else "—"
        if a.verdict == "observed":  # --observe-only: the memory fraction sized the pool, not the settings
            want = "— (observed only: a memory fraction sets the pool)"
        rows.append(
            [
                a.label,
                a.engine,
                settings or "not stated",
                want,
                got,
                a.verdict,
                "; ".join(a.problems or []),
            ]
        )
    head = [
        "block",
        "engine",
        "slots x context, cache",
        "predicted KV",
        "from the log",
        "verdict",
        "problems",
    ]
    return lines + [table(head, rows), ""]


def curve_section(r: RunInputs) -> list[str]:
    """Each summarised curve: its conditions, the level table, knee, fit, operating point, capacity."""
    lines = ["## Curves, knees and operating points", ""]
    shown = [label for label in r.curve_labels if r.levels.get(label)]
    if not shown:
        why = (
            "the plan's summarise steps name no label"
            if not r.curve_labels
            else f"no level of {', '.join(r.curve_labels)} is in the notebook ({r.why_none('sweep')})"
        )
        return lines + absent("No curve", why)
    for label in shown:
        levels = r.levels[label]
        d = curves.curve(levels)
        lines += [f"### {label}", ""]
        if not d.levels:
            lines += absent("No curve", "no level finished a single request")
            continue
        what, conditions = ct.conditions_lines(label, levels, d)
        lines += [f"{what[0].upper()}{what[1:]}; {conditions}.", ""]
        notes = [n for n in (ct.runs_note(levels), ct.spread_note(levels)) if n]
        lines += [f"_{n[0].upper()}{n[1:]}._" for n in notes] + ([""] if notes else [])
        lines += [table(ct.CURVE_HEAD, ct.curve_rows(d, levels))]
        findings = [ct.knee_line(d), *ct.fit_lines(d, levels), ct.operating_line(d)]
        findings += ct.capacity_lines(levels, r.promise)
        lines += [""] + [f"  - {f.strip()}" if f.startswith("  ") else f"- {f}" for f in findings] + [""]
        lines += server_counters.lines(label, levels)
        chart = r.run_dir / "charts" / f"{file_label(label)}-tpot.png"
        if chart.is_file():
            lines += [f"![{label}: TPOT against concurrency]({chart.relative_to(r.run_dir)})", ""]
        lines += sample_charts(r, label)
    return lines


def sample_charts(r: RunInputs, label: str) -> list[str]:
    """A curve's latency histogram and its requests over time, drawn from its exact samples."""
    from harness.report.charts import latency_histogram, rehearsal_mark, requests_over_time

    rows = r.samples(label)
    if not rows:
        return absent(
            f"No latency histogram or requests-over-time chart for {label}",
            f"no per-request samples for it in {r.notebook.with_suffix('.samples.jsonl').name}",
        )
    charts = r.run_dir / "charts"
    mark = rehearsal_mark(r.levels.get(label, {}).values())  # the samples carry no such field
    hist = latency_histogram(label, rows, charts / f"{label}-latency.png", mark)
    lines = [f"![{label}: latency of every completed request]({hist.relative_to(r.run_dir)})", ""]
    if any(rec.get(LEVEL.wall_clock) == "master" for rec in r.levels.get(label, {}).values()):
        # each sample's departure is on its own host's clock: one time line would subtract them
        return lines + absent(
            f"No requests-over-time chart for {label}",
            "its Locust workers ran on other hosts, whose clocks are never set against each other",
        )
    over = requests_over_time(label, rows, charts / f"{label}-over-time.png", mark)
    return lines + [f"![{label}: requests in flight over time]({over.relative_to(r.run_dir)})", ""]


def capacity_searches(r: RunInputs) -> list[str]:
    """Each ``harness capacity`` search in the notebook: criterion, answer, levels and time."""
    recs = [Capacity.read(o) for o in r.records(Capacity.KIND, lambda o: o.get("record") == Capacity.KIND)]
    if not recs:
        return []
    rows = [
        [
            c.label,
            c.criterion.text,
            "none" if c.capacity is None else str(c.capacity),
            c.answer,
            f"{c.levels_measured} levels, {c.runs} runs",
            f"{c.elapsed_s:.0f} of {c.time_budget_s:g}",
            " -> ".join(f"{t.level}:{t.verdict}" for t in c.tried),
        ]
        for c in recs
    ]
    head = [
        "search",
        "promise",
        "capacity",
        "answer",
        "measured",
        "seconds (of budget)",
        "path (level:verdict)",
    ]
    return [
        "## Capacity found by search",
        "",
        f"Each verdict from a bootstrap interval over the pooled requests of a level "
        f"({recs[0].confidence:.0%}); the levels at the boundary were run again until stable.",
        "",
        table(head, rows),
        "",
    ]


def lab_heading(r: RunInputs) -> list[str]:
    """Where the customer-facing part ends: the course's own sections follow under this heading."""
    return [
        "## The course's lab sections",
        "",
        "What follows is for the course notebook (the engines' differences, the labs' rule tables), not "
        "for the customer.",
        "",
    ]


def demoted(section: Callable[[RunInputs], list[str]]) -> Callable[[RunInputs], list[str]]:
    """A section with every heading one level lower, to sit under ``lab_heading``."""

    def inner(r: RunInputs) -> list[str]:
        return ["#" + line if line.startswith("#") else line for line in section(r)]

    return inner


def comparisons(r: RunInputs) -> list[str]:
    """Each pair the plan compares, level by level, with the conditions that differ stated first;
    a compare step that did not run is one line with its reason."""
    lines = ["## Comparisons (B/A per level) and prefix pairs", ""]
    steps = [s for s in r.plan.steps if s.kind == "compare"]
    if not steps:
        return lines + absent("No comparison", r.why_none("compare"))
    status = {s[STEP.id]: s for s in r.manifest.get(MANIFEST.steps, [])}
    for step in steps:
        pairs = [tuple(p) for p in step.options.get("items", [])]
        entry = status.get(step.id) or {}
        if entry.get(STEP.status) in ("skipped", "failed"):
            named = "; ".join(f"{a} against {b}" for a, b in pairs)
            why = f"step {step.id} {entry[STEP.status]}" + (
                f": {entry[STEP.reason]}" if entry.get(STEP.reason) else ""
            )
            lines += absent(f"Not compared ({named})", why)
            continue
        for a, b in pairs:
            lines += _comparison(r, a, b)
    return lines


def _comparison(r: RunInputs, a: str, b: str) -> list[str]:
    lines = [f"### {a} (A) against {b} (B)", ""]
    missing = [name for name in (a, b) if not r.levels.get(name)]
    shared = sorted(set(r.levels.get(a, {})) & set(r.levels.get(b, {})))
    if missing or not shared:
        why = (
            f"{' and '.join(missing)} {'was' if len(missing) == 1 else 'were'} not measured in this run"
            if missing
            else "the two share no concurrency level"
        )
        return lines + absent("Not compared", why)
    diff = ct.differences(r.levels[a], r.levels[b], shared)
    lines += [f"- {d}" for d in diff] + ([""] if diff else [])
    return lines + [table(ct.COMPARE_HEAD, ct.compare_rows(r.levels[a], r.levels[b], shared)), ""]


def single_user(r: RunInputs) -> list[str]:
    """The single-user speed and memory table and the API feature table."""
    lines = ["## Single user: prefill, decode, memory; API features", ""]
    speed = r.records("engine-speed", is_engine_speed)
    feats = r.records("features", is_features)
    if not speed and not feats:
        return lines + absent("No single-user measurement", r.why_none("measure"))
    order, by_speed, by_feat = engine_tables.latest_per_engine(speed, feats)
    sp, fe = engine_tables.speed_rows(order, by_speed), engine_tables.feature_rows(order, by_feat)
    lines += ["Speed and memory (medians; prefill from the short/long difference):", ""]
    lines += (
        [table(engine_tables.SPEED_HEAD, sp), ""] if sp else absent("No speed record", r.why_none("measure"))
    )
    lines += engine_energy.section(order, by_speed, table) if sp else []
    lines += ["API features:", ""]
    lines += (
        [table(engine_tables.FEATURE_HEAD, fe), ""]
        if fe
        else absent("No feature record", r.why_none("probe"))
    )
    lines += [
        f"The lab's recording-sheet rows of these tables: `harness engines --labbook {r.notebook}`.",
        "",
    ]
    return lines


CROSS_CHECK_HEAD = [
    "row",
    "tool",
    "out tok/s ours",
    "out tok/s tool",
    "ratio",
    "TPOT p50 ours (s)",
    "TPOT p50 tool (s)",
    "verdict",
]


def cross_check_rows(checks: list[dict]) -> list[list[str]]:
    """Our row beside the engine's own generator: output tokens/s and median TPOT, ratio, verdict."""
    speed, tpot = FIGURES.output_tokens_per_s, FIGURES.tpot_p50_s
    rows = []
    for c in map(CrossCheck.read, checks):
        rows.append(
            [
                f"{c.label} c={c.concurrency}",
                c.tool,
                ct.f(c.ours[speed], ".1f"),
                ct.f(c.theirs[speed], ".1f"),
                ct.f(c.comparison.output_tokens_per_s_ratio, ".2f"),
                ct.f(c.ours[tpot], ".4f"),
                ct.f(c.theirs[tpot], ".4f"),
                c.comparison.verdict,
            ]
        )
    return rows


def cross_check(r: RunInputs) -> list[str]:
    """The cross-check against the engine's own load generator, when the plan has one."""
    checks = r.records(CrossCheck.KIND, lambda o: o.get("record") == CrossCheck.KIND)
    lines = ["## Cross-check against the engine's own generator", ""]
    if not checks:
        return (
            []
            if not r.steps_of("cross-check")
            else lines + absent("No cross-check", r.why_none("cross-check"))
        )
    return lines + [table(CROSS_CHECK_HEAD, cross_check_rows(checks)), ""]


def _counts(verdicts: list[str]) -> str:
    return ", ".join(f"{verdicts.count(v)} {v.lower()}" for v in ("PASS", "WARN", "FAIL"))


def validation(r: RunInputs) -> list[str]:
    """The labs' validation rules applied to the records: the load lab's and the engines lab's."""
    lines = ["## Validation", ""]
    if not r.levels and not r.steps_of("check"):
        return lines + absent("No validation", "no level was measured and the plan has no check step")
    # The serving lab's own sweeps (a 1, 5, 10, 20 baseline, a prefix pair) are required where the
    # plan checks the lab (a `check` step); Day 3's crowds are not that lab, and say so.
    lab_sweeps = bool(r.steps_of("check"))
    found = curves.check(r.levels, list(load_errors()), lab_sweeps=lab_sweeps)
    lines += [
        f"Load lab rules: {_counts([v for v, _ in found])}.",
        "",
        *(
            []
            if lab_sweeps
            else [
                "The plan has no check step: the serving lab's 1, 5, 10, 20 baseline and prefix pair are "
                "not asked of it; the rules below are those its own curves can be held to.",
                "",
            ]
        ),
        table(["verdict", "finding"], found),
        "",
    ]
    speed = r.records("engine-speed", is_engine_speed)
    feats = r.records("features", is_features)
    if speed or feats:
        allow_cpu = any(s.options.get("allow_cpu") for s in r.plan.steps if s.kind == "check")
        order, by_speed, by_feat = engine_tables.latest_per_engine(speed, feats)
        rules = engine_tables.check(order, by_speed, by_feat, allow_cpu=allow_cpu)
        rules += engine_tables.rerun_rules(speed)
        lines += [
            f"Engines lab rules{' (CPU backends allowed)' if allow_cpu else ''}: "
            f"{_counts([v for v, _, _ in rules])}.",
            "",
            table(["verdict", "engine", "finding"], [list(x) for x in rules]),
            "",
        ]
    return lines
