"""``harness compare``'s page: the runs' headline table, the sets they fall in, each run's figures
against its set's reference, and the curves and the Pareto overlaid in one chart each, coloured by
what differs. Written as ``compare.md`` and ``compare.html`` (the run report's writers, charts
embedded) with the charts under ``charts/``; the terminal gets the same findings in lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from harness.compare import figures, sets
from harness.compare.runs import read_runs
from harness.measure.stats import median
from harness.report.curve_tables import f
from harness.report.markdown import absent, table, to_html
from harness.records.level import LEVEL

STYLE_LINES = ("-", "--", ":", "-.")
STYLE_MARKS = ("o", "s", "^", "D", "v", "P")
# the identity fields a settings cell shows
SETTINGS = (LEVEL.server_slots, LEVEL.context_length, LEVEL.endpoint)


@dataclass(frozen=True)
class Comparison:
    """What was compared and found: the sets, the headline rows, each run's calls against its
    reference (by run name), the identity fields that differ and the tolerance."""

    found: list[sets.RunSet]
    rows: list[figures.Headline]
    calls: dict[str, list[figures.Call]]
    differing: list[str]
    tolerance: float


def build(runs: list[sets.Run], tolerance: float, promise_s: float | None) -> Comparison:
    """The comparison of ``runs``: comparable sets, headline rows and calls within each set."""
    found = sets.sets(runs)
    calls = {
        run.name: figures.calls(group.reference, run, tolerance) for group in found for run in group.runs[1:]
    }
    return Comparison(found, figures.headline_rows(found, promise_s), calls, sets.differing(runs), tolerance)


def styles(c: Comparison) -> dict[str, dict]:
    """A line style per run: one colour per value of the first field that differs (the engine,
    say), then line style and marker per run within a colour."""
    key = c.differing[0] if c.differing else None
    colours: dict[str, int] = {}
    within: dict[str, int] = {}
    out = {}
    for row in c.rows:
        value = row.identity[key] if key else ""
        colour = colours.setdefault(value, len(colours))
        n = within[value] = within.get(value, -1) + 1
        out[row.run] = {
            "color": f"C{colour % 10}",
            "linestyle": STYLE_LINES[n % len(STYLE_LINES)],
            "marker": STYLE_MARKS[n % len(STYLE_MARKS)],
        }
    return out


def _legend(c: Comparison, run: sets.Run) -> str:
    """A run's chart label: its name, its set where there are several, and its values of the
    fields that differ."""
    ids = sets.identity(run)
    shown = ", ".join(f"{sets.IDENTITY[n]} {ids[n]}" for n in c.differing[:3])
    no = next(i for i, g in enumerate(c.found, 1) if any(run is r for r in g.runs))
    name = f"{run.name} [set {no}]" if len(c.found) > 1 else run.name
    return f"{name} ({shown})" if shown else name


def _differs_line(c: Comparison) -> str:
    if not c.differing:
        return (
            "Nothing recorded differs between the runs (" + ", ".join(sets.IDENTITY.values()) + "): the "
            "same server measured again."
        )
    values = {n: list(dict.fromkeys(r.identity[n] for r in c.rows)) for n in c.differing}
    said = "; ".join(f"{sets.IDENTITY[n]} ({', '.join(v)})" for n, v in values.items())
    return f"What differs between the runs: {said}. The charts colour by {sets.IDENTITY[c.differing[0]]}."


HEAD = [
    "run",
    "set",
    "engine",
    "version",
    "quantisation",
    "machine",
    "settings",
    "peak output tok/s",
    "knee",
    "operating point",
    "capacity within the promise",
    "matching level",
    "TTFT p95 (s)",
    "TPOT p50 (s)",
    "J per output token",
]


def headline_table(c: Comparison) -> list[list[str]]:
    """The headline rows, grouped by set and, within a set, by the first field that differs."""
    key = c.differing[0] if c.differing else None
    order = sorted(c.rows, key=lambda r: (r.set_no, r.identity[key] if key else ""))
    out = []
    for r in order:
        ids = r.identity
        settings = ", ".join(f"{sets.IDENTITY[n]} {ids[n]}" for n in SETTINGS)
        joules = r.energy_note if r.j_per_token is None else f"{r.j_per_token:.4g}{r.energy_note}"
        out.append(
            [
                r.run,
                str(r.set_no),
                ids[LEVEL.engine],
                ids[LEVEL.engine_version],
                ids[LEVEL.quant],
                ids[LEVEL.host],
                settings,
                r.peak,
                r.knee,
                r.operating_point,
                f"{r.capacity} (p95 TTFT <= {r.promise_s:g} s)",
                "none shared" if r.at is None else f"c={r.at}",
                f(r.ttft_p95_s, ".3f"),
                f(r.tpot_p50_s, ".4f"),
                joules if r.at is not None else "-",
            ]
        )
    return out


def set_lines(c: Comparison) -> list[str]:
    """Each set: its runs, the conditions they share, and why a set stands apart from the first."""
    out = []
    for no, group in enumerate(c.found, 1):
        names = ", ".join(r.name for r in group.runs)
        alike = sets.conditions_text(group.reference)
        if group.apart:
            out.append(f"- Set {no}: {names}: not compared with the others: {group.apart}.")
        elif len(group.runs) == 1:
            out.append(f"- Set {no}: {names} alone; it ran with {alike}.")
        else:
            out.append(f"- Set {no}: {names}; reference {group.reference.name}; all ran with {alike}.")
    return out


def called(c: Comparison) -> list[str]:
    """Every difference called, in words, naming what differs between the two runs."""
    out = []
    for group in c.found:
        for run in group.runs[1:]:
            for x in c.calls[run.name]:
                if x.verdict in figures.CALLED:
                    out.append(
                        f"{run.name} against {x.reference} ({sets.change_words(group.reference, run)}): "
                        f"{x.text()}"
                    )
    return out


def _pair_section(c: Comparison, group: sets.RunSet, run: sets.Run) -> list[str]:
    found = c.calls[run.name]
    ref = group.reference.name
    lines = [
        f"### {run.name} against {ref}",
        "",
        f"What differs: {sets.change_words(group.reference, run)}.",
        "",
    ]
    if not found:
        return lines + absent("Nothing compared", f"{run.name} and {ref} share no level")
    hits = [x for x in found if x.verdict in figures.CALLED]
    few = [x for x in found if x.verdict == "too few runs"]
    if hits:
        lines += ["Differences called:", "", *(f"- {x.text()}" for x in hits), ""]
    else:
        lines += [
            f"No difference called: every figure is within {c.tolerance:.0%} or within the runs' spread"
            + (
                f"; {len(few)} moved beyond both but from too few runs to tell (3 a side are needed)"
                if few
                else ""
            )
            + ".",
            "",
        ]
    rows = [
        [x.level, x.metric, _values(x.ref_values), _values(x.values), _change(x.change), x.verdict]
        for x in found
    ]
    return lines + [table(["level", "figure", ref, run.name, "change (+ worse)", "verdict"], rows), ""]


def _values(values: list[float]) -> str:
    if not values:
        return "-"
    mid = median(values)
    text = f"{mid:.4g}"
    return text + (f" ({min(values):.4g}-{max(values):.4g}, {len(values)} runs)" if len(values) > 1 else "")


def _change(share: float | None) -> str:
    return "-" if share is None else f"{share:+.1%}"


def markdown(c: Comparison, charts: list[tuple[str, str]]) -> str:
    """The page as Markdown; ``charts`` are (alt text, relative path) pairs."""
    sources = list(dict.fromkeys(r.source for g in c.found for r in g.runs))
    lines = [
        "# Runs compared",
        "",
        f"{len(c.rows)} runs from {', '.join(f'`{s}`' for s in sources)}. A difference is called only "
        f"where the medians differ by more than {c.tolerance:.0%} and every run of one side lies beyond "
        "every run of the other, with runs enough for that to happen by chance at most 1 time in 20 "
        "(the regression gate's test; 3 runs a side, `sweep --repeat 3`).",
        "",
        _differs_line(c),
        "",
        "## Headline",
        "",
        "Latencies and energy are read at each set's matching level: the largest crowd all its runs "
        "completed.",
        "",
        table(HEAD, headline_table(c)),
        "",
        "## Comparable sets",
        "",
        "Runs are compared only when they sent the same requests under the same objectives (model, "
        "workload, prompts, lengths, arrival, promise).",
        "",
        *set_lines(c),
        "",
        "## Each run against its set's reference",
        "",
    ]
    pairs = [(g, r) for g in c.found for r in g.runs[1:]]
    for group, run in pairs:
        lines += _pair_section(c, group, run)
    if not pairs:
        lines += absent("Nothing compared", "no two runs ran alike")
    lines += ["## Charts", ""]
    for alt, path in charts:
        lines += [f"![{alt}]({path})", ""]
    if not charts:
        lines += absent("No chart", "no run completed a level")
    return "\n".join(lines).rstrip() + "\n"


def draw(c: Comparison, runs: list[sets.Run], out_dir: Path) -> list[tuple[str, str]]:
    """The crowd chart and the Pareto chart, every run overlaid, in ``out_dir/charts``."""
    from harness.measure.curves import completed_levels
    from harness.report.charts import crowd_chart, pareto_chart

    shown = {_legend(c, r): r.levels() for r in runs if completed_levels(r.levels())}
    if not shown:
        return []
    drawn = styles(c)
    by_legend = {_legend(c, r): drawn[r.name] for r in runs}
    crowd = crowd_chart(shown, out_dir / "charts" / "compare-crowd.png", None, by_legend)
    pareto = pareto_chart(shown, out_dir / "charts" / "compare-pareto.png", by_legend)
    return [
        (
            "total output and p95 first-token wait against crowd size, every run",
            str(crowd.relative_to(out_dir)),
        ),
        ("per-user against total output tokens/s, every run", str(pareto.relative_to(out_dir))),
    ]


@dataclass(frozen=True)
class Written:
    """The files written and the lines for the terminal, and the warnings of lines not read."""

    markdown: Path
    html: Path
    lines: list[str]
    warnings: list[str]


def terminal_lines(c: Comparison) -> list[str]:
    """The findings for the terminal: the sets, what differs, and every difference called."""
    hits = called(c)
    brief = [[r[0], r[1], r[2], r[7], r[8], r[9], r[11]] for r in headline_table(c)]
    head = ["run", "set", "engine", "peak out tok/s", "knee", "operating point", "matching level"]
    return [
        f"==> compare: {len(c.rows)} runs in {len(c.found)} comparable set(s), tolerance {c.tolerance:.0%}",
        *(f"    {line}" for line in tabulate(brief, headers=head, disable_numparse=True).splitlines()),
        f"    {_differs_line(c)}",
        *(f"    {line[2:]}" for line in set_lines(c)),
        *(f"    called: {line}" for line in hits),
        *([] if hits else ["    no difference called beyond the tolerance and the runs' spread"]),
    ]


def write_comparison(
    named: list[str], labbook: str, tolerance: float, promise_s: float | None, out_dir: Path
) -> Written:
    """Read the runs named, compare them and write ``compare.md``, ``compare.html`` and the charts
    in ``out_dir``."""
    runs, warnings = read_runs(named, labbook)
    c = build(runs, tolerance, promise_s)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = markdown(c, draw(c, runs, out_dir))
    md, page = out_dir / "compare.md", out_dir / "compare.html"
    md.write_text(text, encoding="utf-8")
    page.write_text(to_html(text, out_dir, "Runs compared"), encoding="utf-8")
    return Written(md, page, terminal_lines(c), warnings)
