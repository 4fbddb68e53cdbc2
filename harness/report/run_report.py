"""The run report (``report.md``) and its headline numbers, built from the notebook's records and
the run manifest only (docs/architecture.md, "Contracts"). ``headlines`` is pure; ``write_report`` reads the
run directory and draws the crowd chart."""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from harness.core import curves
from harness.report import engine_tables, measured
from harness.core.records import is_engine_speed, is_features, is_level
from harness.io.notebook import read_records


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
) -> list[dict]:
    """One row per curve: peak output tokens/s, knee, operating point, capacity within the promise,
    and the prefix-caching TTFT change of the pair run on the same server."""
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
        rows.append(
            {
                "label": label,
                "engine": first.get("engine"),
                "peak_tok_s": max(levels[c]["output_tokens_per_s"] for c in d.levels),
                "knee": f"{d.knee[0]}->{d.knee[1]}" if d.knee else "none",
                "operating_point": d.operating_point,
                "capacity": curves.capacity_within(levels, promise_s),
                "prefix": change,
            }
        )
    return rows


def headline_lines(rows: list[dict], promise_s: float) -> list[str]:
    out = []
    for r in rows:
        pre = r["prefix"]
        prefix = (
            "prefix caching: no pair"
            if pre is None
            else f"prefix caching: TTFT p50 {pre['ttft_unique_s']:.3f} -> {pre['ttft_shared_s']:.3f} s at "
            f"c={pre['c']} ({pre['change'] or 0:+.0%}"
            + (
                f", {pre['cached_share']:.0%} of the prompt cached)"
                if pre["cached_share"] is not None
                else ")"
            )
        )
        out.append(
            f"{r['label']} ({r['engine']}): peak {r['peak_tok_s']:.1f} tok/s, knee {r['knee']}, operating "
            f"point {'c=' + str(r['operating_point']) if r['operating_point'] else 'none'}, capacity within "
            f"{promise_s:g} s p95 TTFT: {r['capacity'] or 'none'}; {prefix}"
        )
    return out


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


def levels_in(notebook: Path) -> dict[str, dict[int, dict]]:
    recs = read_records(notebook, "level", select=is_level).records
    return curves.by_label(recs)


def _section_from_logs(run_dir: Path, manifest: dict, kinds: tuple[str, ...]) -> list[str]:
    out = []
    for s in manifest["steps"]:
        if s["kind"] in kinds and s.get("log") and Path(s["log"]).is_file():
            out += [
                f"**{s['id']}**",
                "",
                "```",
                Path(s["log"]).read_text(encoding="utf-8").rstrip(),
                "```",
                "",
            ]
    return out


def cross_check_table(checks: list[dict]) -> str:
    """Our row beside the engine's own generator: output tokens/s and median TPOT, ratio and verdict."""

    def f(x, spec):
        return "—" if x is None else format(x, spec)

    rows = [
        [
            f"{c['label']} c={c['concurrency']}",
            c["tool"],
            f(c["ours"]["output_tokens_per_s"], ".1f"),
            f(c["theirs"]["output_tokens_per_s"], ".1f"),
            f(c["output_tokens_per_s_ratio"], ".2f"),
            f(c["ours"]["tpot_p50_s"], ".4f"),
            f(c["theirs"]["tpot_p50_s"], ".4f"),
            c["verdict"],
        ]
        for c in checks
    ]
    return tabulate(
        rows,
        headers=[
            "row",
            "tool",
            "out tok/s ours",
            "out tok/s tool",
            "ratio",
            "TPOT p50 ours",
            "TPOT p50 tool",
            "verdict",
        ],
        tablefmt="github",
    )


def skipped_blocks(manifest: dict) -> list[str]:
    """Optional blocks that did not run here (their engine is not installed), each with its reason."""
    found = [
        f"- `{s['id'].removesuffix('/start')}`: {s.get('reason') or 'skipped'}"
        for s in manifest["steps"]
        if s["id"].endswith("/start") and s["status"] == "skipped"
    ]
    return ["Blocks skipped on this machine:", "", *found, ""] if found else []


def write_report(run_dir: Path, plan, manifest: dict) -> Path:
    """``report.md`` in the run directory, from the notebook's records, the step logs and the
    manifest: conditions, engines, headline numbers, charts, the steps' own outputs, tables."""
    notebook = run_dir / "labbook.md"
    levels = levels_in(notebook) if notebook.is_file() else {}
    promise = float(plan.variables.get("PROMISE_S", plan.sweep.get("slo_ttft", 2.0)))
    curve_labels, pairs = plan_pairs(plan)
    rows = headlines(levels, curve_labels, pairs, promise)
    lines = _conditions(run_dir, plan, manifest, promise)
    lines += _engines(manifest)
    lines += skipped_blocks(manifest)
    lines += ["## Headline numbers", ""]
    lines += [f"- {x}" for x in headline_lines(rows, promise)] or ["- no curve was measured"]
    lines.append("")
    lines += _charts(run_dir, levels, curve_labels, promise)
    lines += ["## Allocation against the prediction", ""] + _section_from_logs(
        run_dir, manifest, ("verify-allocation",)
    )
    lines += ["## Curves, knees and operating points", ""] + _section_from_logs(
        run_dir, manifest, ("summarise",)
    )
    lines += ["## Comparisons (B/A per level) and prefix pairs", ""] + _section_from_logs(
        run_dir, manifest, ("compare",)
    )
    lines += _single_user_and_checks(notebook)
    lines += measured.section(notebook, plan)
    lines += ["## Validation", ""] + _section_from_logs(run_dir, manifest, ("check",))
    lines += _steps(manifest)
    path = run_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _conditions(run_dir: Path, plan, manifest: dict, promise: float) -> list[str]:
    return [
        f"# {plan.title}",
        "",
        f"Plan `{plan.path}`"
        + (f", tier {plan.tier}" if plan.tier else "")
        + f"; run directory `{run_dir}`; "
        f"started {manifest['started']}, report written {manifest['updated']}.",
        "",
        "## Test conditions",
        "",
        f"- Machine: {plan.variables.get('HOST_DESC', 'not stated')} ({manifest['host'].get('system')}, "
        f"{manifest['host'].get('cpus')} CPUs)",
        f"- Promise for capacity: p95 TTFT within {promise:g} s; objective for goodput and the operating "
        "point: "
        f"TTFT <= {plan.sweep.get('slo_ttft', 2.0)} s and TPOT <= {plan.sweep.get('slo_tpot', 0.1)} s (p90)",
        f"- Load: closed loop (each simulated user sends its next request when the last one finishes); sweep "
        f"options {', '.join(f'{k} {v}' for k, v in plan.sweep.items()) or 'as each step states'}",
        "",
    ]


def _engines(manifest: dict) -> list[str]:
    engine_rows = [
        [
            bid,
            e["engine"],
            e.get("version") or "—",
            ", ".join(f"{k} {a} -> {b}" for k, (a, b) in (e.get("changed") or {}).items()) or "—",
            f"`{e['command']}`",
        ]
        for bid, e in manifest.get("engines", {}).items()
    ]
    if not engine_rows:
        return []
    return [
        "Engines, one at a time, each started with every setting stated:",
        "",
        tabulate(
            engine_rows,
            headers=["block", "engine", "version", "one change", "command"],
            tablefmt="github",
        ),
        "",
    ]


def _charts(run_dir: Path, levels: dict, curve_labels: list[str], promise: float) -> list[str]:
    from harness.report.charts import crowd_chart

    lines: list[str] = []
    charts = run_dir / "charts"
    shown = {label: levels[label] for label in curve_labels if label in levels}
    if shown:
        chart = crowd_chart(shown, charts / "crowd.png", promise)
        lines += [
            "## Throughput and first-token wait against crowd size",
            "",
            f"![crowd chart]({chart.relative_to(run_dir)})",
            "",
        ]
    for label in curve_labels:
        tpot = charts / f"{label}-tpot.png"
        if tpot.is_file():
            lines += [f"![{label} TPOT]({tpot.relative_to(run_dir)})", ""]
    return lines


def _single_user_and_checks(notebook: Path) -> list[str]:
    lines: list[str] = []
    speed, feats = [], []
    if notebook.is_file():
        speed = read_records(notebook, "engine-speed", select=is_engine_speed).records
        feats = read_records(notebook, "features", select=is_features).records
    if speed or feats:
        order, by_speed, by_feat = engine_tables.latest_per_engine(speed, feats)
        lines += [
            "## Single user: prefill, decode, memory; API features",
            "",
            engine_tables.render(order, by_speed, by_feat),
            "",
        ]
    checks = (
        read_records(notebook, "cross-check", select=lambda o: o.get("record") == "cross-check").records
        if notebook.is_file()
        else []
    )
    if checks:
        lines += ["## Cross-check against the engine's own generator", "", cross_check_table(checks), ""]
    return lines


def _steps(manifest: dict) -> list[str]:
    step_rows = [
        [
            s["id"],
            s["status"],
            s.get("duration_s") if s.get("duration_s") is not None else "—",
            (s.get("reason") or (s.get("result") or {}).get("why") or "")[:120],
        ]
        for s in manifest["steps"]
    ]
    return [
        "## Steps",
        "",
        tabulate(step_rows, headers=["step", "status", "seconds", "note"], tablefmt="github"),
        "",
    ]
