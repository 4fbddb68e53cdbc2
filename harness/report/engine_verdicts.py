"""The engine comparison's explanation of its differences from records: each engine's decode
rate against the ceiling of its own format, the native/portable decode ratios against the ratios
the formats predict, the memory each source can see and the overhead beyond it, prefill, the
faster engine that can do the task, and the limits of the comparison."""

from __future__ import annotations

from dataclasses import dataclass, field

from tabulate import tabulate

from harness.sizing import format_compare as ec
from harness import lab
from harness.report import identity
from harness.sizing.predictions import decode_ceiling, kv_per_token
from harness.report.engine_tables import memory_added
from harness.records.engine import FEATURES, SPEED, VERDICT

# The section's heading: the engines lab's own title of the task this module answers.
TITLE = lab.task_answered_by("report/engine_verdicts")

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PORTABLE = ("llama.cpp", "llama-server")  # the portable control every native engine is divided by


@dataclass(frozen=True)
class Inputs:
    """What the explanation reads besides the records: the model (shape and formats), the
    machine's bandwidth (None: no ceilings) and the visible-memory rules."""

    model: object
    bandwidth_gb_s: float | None
    machine_label: str
    rules: dict
    settings: dict = field(default_factory=dict)  # engine -> what turns each API feature on
    mapped_mib: float | None = None  # the load log's MTL0_Mapped buffer (Apple silicon), for vm_stat rows


def formats(order: list[str], speed: dict, model) -> dict[str, str]:
    """Engine -> the model-table format its quant names (engines whose quant names none are absent)."""
    out = {}
    for engine in order:
        rec = (speed.get(engine) or {}).get("short") or (speed.get(engine) or {}).get("long")
        name = ec.format_for_quant((rec or {}).get(SPEED.quant, ""), model.formats) if rec else None
        if name:
            out[engine] = name
    return out


def ceilings(order: list[str], speed: dict, model, bandwidth_gb_s: float) -> dict[str, float]:
    """Engine -> decode ceiling of the format it served (short prompt: no context read)."""
    per = kv_per_token(model)
    return {
        engine: decode_ceiling(
            bandwidth_gb_s, model.formats[f]["tensor_bytes"], model.formats[f]["embedding_bytes"], per, 0
        )
        for engine, f in formats(order, speed, model).items()
    }


def _short_rate(speed: dict, engine: str) -> float | None:
    return ((speed.get(engine) or {}).get("short") or {}).get(SPEED.decode_tokens_per_s)


def portable_engine(order: list[str], fmts: dict) -> str | None:
    return next((e for e in order if e.lower().startswith(PORTABLE) and e in fmts), None)


MEANING = {
    "lower": "{native} is further below its bandwidth ceiling than {portable} (its kernels, or scheduling "
    "at batch 1)",
    "higher": "{portable} is further below its ceiling than {native}; check its offload lines",
    "as predicted": "the bytes each format reads per token explain the difference",
}


def ratio_rows(order: list[str], speed: dict, model, fmts: dict) -> list[list]:
    portable = portable_engine(order, fmts)
    base = _short_rate(speed, portable) if portable else None
    rows = []
    for engine in order:
        if engine == portable or engine not in fmts or not portable:
            continue
        native, control = model.formats[fmts[engine]], model.formats[fmts[portable]]
        predicted = ec.predicted_ratio(native, control)
        rate = _short_rate(speed, engine)
        measured = rate / base if rate and base else None
        verdict = ec.ratio_verdict(measured, predicted) if measured else "not measured"
        meaning = MEANING.get(verdict, "").format(native=engine, portable=portable)
        rows.append(
            [
                f"{engine} / {portable}",
                f"{fmts[engine]} / {fmts[portable]}",
                f"{measured:.2f}" if measured else "—",
                f"{ec.read_bytes(control) / 1e9:.2f} / {ec.read_bytes(native) / 1e9:.2f} = {predicted:.2f}",
                verdict + (f": {meaning}" if meaning else ""),
            ]
        )
    return rows


def memory_rows(
    order: list[str], speed: dict, model, fmts: dict, rules: dict, mapped_mib: float | None = None
) -> list[list]:
    rows = []
    per = kv_per_token(model)
    for engine in order:
        pair = speed.get(engine) or {}
        rec = pair.get("long") or pair.get("short")
        found = ec.rule_for(engine, rules)
        cpu = str((rec or {}).get(SPEED.backend) or "").upper() == "CPU"
        if not rec or engine not in fmts or not found or cpu:
            why = (
                "no rule for this engine"
                if not found
                else "its quant names no format of the model"
                if engine not in fmts
                else "it ran on the CPU backend: the rules say what a GPU's memory figure sees"
            )
            rows.append([engine, "—", "—", "—", "—", why])
            continue
        added, source = memory_added(rec)
        long = pair.get("long") or {}
        tokens = ec.cache_tokens(
            found[1],
            int(rec.get(SPEED.context_length) or 0),
            (long.get(SPEED.prompt_tokens) or 0) + (long.get(SPEED.completion_tokens) or 0),
        )
        low, high = ec.visible_bytes(found[1], model.formats[fmts[engine]], per, tokens, "vm_stat" in source)
        seen = f"{low:,}" if low == high else f"{low:,} to {high:,}"
        if added is None:
            over = "— (no idle snapshot)"
        else:
            o_low, o_high = ec.overhead_mb(added, (low, high))
            over = f"{o_low:,.0f}" if low == high else f"{o_low:,.0f} to {o_high:,.0f}"
        note = "embedding in host memory, not seen" if found[1].get("embedding") == "host" else "nothing"
        if low != high:
            note = "mapped weight pages: vm_stat counts none to all of them"
            if mapped_mib is not None:  # the engines lab: write the MTL0_Mapped line beside the delta
                note += f" (the load log's MTL0_Mapped model buffer: {mapped_mib:,.2f} MiB)"
        if added is not None and "vm_stat" in source and ec.overhead_mb(added, (low, high))[0] > MUCH_MB:
            note = MUCH_LARGER
        rows.append([engine, source, f"{seen} ({_cache_words(found[1], tokens, per)})", added, over, note])
    return rows


MUCH_MB = 1500  # beyond what a Metal context, compute buffers and the server process add
MUCH_LARGER = (
    "much larger than predicted (the engines lab's Apple silicon row): other applications grew during the "
    "run; close them, take a fresh idle snapshot, re-measure"
)


def _cache_words(rule: dict, tokens: int, per_token: float) -> str:
    """What the cache in the visible bytes holds: a pool the engine was told in bytes (vLLM's 1.25 GiB)
    as its bytes and the tokens they hold, else the tokens counted."""
    if rule.get("kv") == "bytes":
        pool = int(rule["kv_bytes"])
        return f"{pool:,}-byte pool, about {int(pool // per_token):,} cache tokens"
    return f"{tokens:,} cache tokens"


def _prefill_line(order: list[str], speed: dict) -> str:
    rates = [(((speed.get(e) or {}).get("long") or {}).get(SPEED.prefill_tokens_per_s), e) for e in order]
    rates = sorted(((r, e) for r, e in rates if r), reverse=True)
    if len(rates) < 2:
        return "Prefill: fewer than two engines have a difference-based rate; nothing to compare."
    (top, first), (low, last) = rates[0], rates[-1]
    return (
        f"Prefill (compute-bound; bandwidth predicts nothing): {first} is fastest at {top:,.1f} tok/s, "
        f"{top / low:.2f} x {last} ({low:,.1f} tok/s)."
    )


FEATURE_NAMES = {FEATURES.tool_calling: "tool calling", FEATURES.structured_output: "JSON schema"}


def feature_lines(order: list[str], features: dict, settings: dict) -> list[str]:
    """Every failed probe, its detail string, and the setting or version that would change it."""
    lines = []
    for engine in order:
        f = features.get(engine) or {}
        found = ec.rule_for(engine, settings)
        for key, title in FEATURE_NAMES.items():
            section = f.get(key) or {}
            if section.get(VERDICT.supported) is not False:
                continue
            fix = (found[1].get(key) if found else None) or "no setting known for this engine"
            lines.append(
                f"- {engine}, {title}: {section.get(VERDICT.detail) or 'failed'}; what would change it: {fix}"
            )
    return lines


def _eligible(features: dict, engine: str) -> bool:
    f = features.get(engine) or {}
    return all((f.get(s) or {}).get(VERDICT.supported) is True for s in FEATURE_NAMES)


def verdict_lines(order, speed, features, fmts: dict, ceils: dict) -> list[str]:
    """The faster engine that can do the task (tool calls and JSON schema), and the limits."""
    measured = [(r, e) for e in order if (r := _short_rate(speed, e))]
    lines = []
    if measured:
        rate, fastest = max(measured)
        lines.append(f"Fastest single-user decode: {fastest} at {rate:.2f} tok/s.")
        fit = [(r, e) for r, e in measured if _eligible(features, e)]
        if fit:
            rate, winner = max(fit)
            lines.append(
                f"Winner for a task needing tool calls and JSON-schema output: {winner} ({rate:.2f} tok/s)."
            )
        else:
            lines.append(
                "No engine passed both the tool-calling and the JSON-schema probe: none is eligible."
            )
        unfit = [e for _, e in measured if not _eligible(features, e)]
        if unfit and fit:
            lines.append(
                "Not eligible however fast (a tool-calling or JSON-schema probe failed or is missing): "
                + ", ".join(unfit)
                + "."
            )
    limits = []
    if len(set(fmts.values())) > 1:
        limits.append(
            "the engines do not serve the same bits ("
            + ", ".join(sorted(set(fmts.values())))
            + "): a comparison of deployable stacks, not of kernels"
        )
    for engine in order:
        pair = speed.get(engine) or {}
        if set(pair) != {"short", "long"} or engine not in features:
            limits.append(f"{engine} is unvalidated (missing short/long speed or the features record)")
        if engine not in fmts:
            limits.append(f"{engine}: its quant names no format of the model, so no ceiling or ratio")
        rate, ceiling = _short_rate(speed, engine), ceils.get(engine)
        if rate and ceiling and rate > ceiling:
            limits.append(f"{engine} decodes above its own ceiling: the bandwidth figure is wrong")
        rec = pair.get("short") or pair.get("long") or {}
        if (rec.get(SPEED.backend) or "").lower() == "cpu":
            limits.append(f"{engine} ran on the CPU backend")
        if "vm_stat" in memory_added(pair.get("long") or rec)[1]:
            limits.append(
                f"{engine}: vm_stat counts mapped file pages differently, so its memory is not on "
                "the same terms as an allocating engine's"
            )
    lines.append("Limitations: " + ("; ".join(limits) if limits else "none found in the records") + ".")
    return lines


def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def render(order, speed, features, inputs: Inputs) -> str:
    """The explanation of the differences as Markdown: ceilings per format, ratios, memory,
    prefill, winner and limits."""
    model = inputs.model
    fmts = formats(order, speed, model)
    ceils = ceilings(order, speed, model, inputs.bandwidth_gb_s) if inputs.bandwidth_gb_s else {}
    parts = [f"Predictions for {model.name} ({model.source}), in the formats each engine's quant names."]
    served = sorted({rec.get(SPEED.model, "") for pair in speed.values() for rec in pair.values()} - {""})
    if not any(_squash(model.name) in _squash(name) for name in served):
        parts.append(
            f"Warning: no record names {model.name} (they name {', '.join(served) or 'nothing'}); if the "
            "engines served another model, these predictions are not theirs: pass its file or table name."
        )
    parts += ["", *identity.section(order, speed)]
    if inputs.bandwidth_gb_s:
        rows = [
            [
                e,
                fmts[e],
                f"{ec.read_bytes(model.formats[fmts[e]]) / 1e9:.2f}",
                f"{ceils[e]:.1f}",
                _short_rate(speed, e) or "—",
                f"{ec.share(r, ceils[e]):.2f}" if (r := _short_rate(speed, e)) else "—",
            ]
            for e in order
            if e in fmts
        ]
        parts += [
            f"Decode against the ceiling of each engine's own format ({inputs.machine_label}, "
            f"{inputs.bandwidth_gb_s:g} GB/s; above 1 means the bandwidth figure is wrong)",
            "",
            tabulate(
                rows,
                headers=[
                    "Engine",
                    "Format",
                    "Read GB/token",
                    "Ceiling tok/s",
                    "Decode short tok/s",
                    "Share of ceiling",
                ],
                tablefmt="github",
                disable_numparse=True,
            ),
            "",
        ]
    else:
        parts += ["No ceilings: no machine (bandwidth) was given; pass --machine.", ""]
    ratios = ratio_rows(order, speed, model, fmts)
    parts += [
        "Decode ratio, native / portable (short prompt), beside the ratio of bytes read per token",
        "",
        tabulate(
            ratios,
            headers=["Engines", "Formats", "Measured", "Predicted (GB read)", "Reading"],
            tablefmt="github",
            disable_numparse=True,
        )
        if ratios
        else "no native engine beside a llama.cpp control with a known format",
        "",
        "Memory: the predicted bytes each source can see, and the overhead beyond them (MB = 1,000,000 B)",
        "",
        tabulate(
            memory_rows(order, speed, model, fmts, inputs.rules, inputs.mapped_mib),
            headers=[
                "Engine",
                "Memory source",
                "Predicted visible bytes",
                "Memory added MB",
                "Overhead MB",
                "Excluded",
            ],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        _prefill_line(order, speed),
        "",
        "Features: every probe failure and what would change it",
        "",
        *(feature_lines(order, features, inputs.settings) or ["- no probe failed"]),
        "",
        *verdict_lines(order, speed, features, fmts, ceils),
    ]
    return "\n".join(parts)
