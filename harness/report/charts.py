"""Charts (PNG, matplotlib, no display needed), drawn from level records only."""

from __future__ import annotations

from pathlib import Path

import matplotlib

from harness.core.curves import completed_levels

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
    return REHEARSAL_MARK if any(r.get("rehearsal") for r in records) else ""


def conditions(levels_by_label: dict[str, dict[int, dict]], promise_s: float | None) -> str:
    """The test conditions printed above every chart: traffic profile, crowd sizes, promise."""
    recs = [r for lv in levels_by_label.values() for r in lv.values()]
    prompt = [r.get("prompt_tokens_mean") for r in recs if r.get("prompt_tokens_mean")]
    max_out = sorted({r.get("max_tokens") for r in recs if r.get("max_tokens")})
    crowds = sorted({c for lv in levels_by_label.values() for c in lv})
    text = (
        f"about {round(sum(prompt) / len(prompt)) if prompt else '?'} tokens in / up to "
        f"{', '.join(map(str, max_out)) or '?'} out · {crowds[0]} to {crowds[-1]} at once (closed loop)"
    )
    if promise_s is not None:
        text += f" · promise: p95 first token within {promise_s:g} s"
    mark = rehearsal_mark(recs)
    return f"{mark}\n{text}" if mark else text


def crowd_chart(
    levels_by_label: dict[str, dict[int, dict]], path: str | Path, promise_s: float | None = None
) -> Path:
    """Total output tokens/s and p95 first-token wait against crowd size, one line per label."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for label, levels in levels_by_label.items():
        cs = completed_levels(levels)
        top.plot(cs, [levels[c]["output_tokens_per_s"] for c in cs], marker="o", label=label)
        p95 = [(levels[c]["ttft_s"].get("p95") or levels[c]["ttft_s"].get("p90")) for c in cs]
        bottom.plot(cs, p95, marker="o", label=label)
    if promise_s is not None:
        bottom.axhline(promise_s, color="grey", linestyle="--", linewidth=1, label=f"promise {promise_s:g} s")
    top.set_ylabel("total output (tokens/s)")
    bottom.set_ylabel("first-token wait p95 (s)")
    bottom.set_xlabel("people at once (concurrency)")
    bottom.set_xticks(sorted({c for lv in levels_by_label.values() for c in lv}))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(conditions(levels_by_label, promise_s), fontsize=9)
    return _save(fig, path)


def tpot_chart(label: str, levels: dict[int, dict], fit: dict | None, path: str | Path) -> Path:
    """TPOT p50 and p90 against concurrency with the fitted line a + b c."""
    cs = completed_levels(levels)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(cs, [levels[c]["tpot_s"]["p50"] for c in cs], "o", label="TPOT p50")
    ax.plot(cs, [levels[c]["tpot_s"]["p90"] for c in cs], "x", label="TPOT p90")
    if fit:
        xs = [0, max(cs)]
        ax.plot(
            xs,
            [fit["a_s"] + fit["b_s"] * x for x in xs],
            "-",
            linewidth=1,
            label=f"fit {fit['a_s'] * 1000:.1f} ms + {fit['b_s'] * 1000:.2f} ms x c",
        )
    ax.set_xlabel("concurrency")
    ax.set_ylabel("time per output token (s)")
    mark = rehearsal_mark(levels.values())
    ax.set_title(f"{label}: TPOT against concurrency" + (f"\n{mark}" if mark else ""), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
