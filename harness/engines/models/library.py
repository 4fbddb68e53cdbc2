"""The model library filled for a track: each format's download planned (with the sizes the hub
listed) or fetched and checked, a ``model-fetch`` record per format; each line to the caller's ``say``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.errors import HarnessError
from harness.engines.models import download_table, fetch as model_fetch
from harness.records.engine import ModelFetch
from harness.records.notebook import append_record

Say = Callable[[str], None]


def dry_run(
    table: dict, chosen: list[tuple[str, dict]], library: Path, what: str, ask_hub: bool, say: Say
) -> int:
    """Print each format's plan and the listed sizes; with --ask-hub, hf's own dry-run totals."""
    say(
        f"==> {what}: {len(chosen)} format(s) into {library} (dry run: nothing is downloaded; "
        f"sizes as the hub listed them on {table['listed_on']})"
    )
    total = 0.0
    for key, fmt in chosen:
        for line in download_table.plan_lines(key, fmt, library):
            say(line if line.startswith("    ") else "  " + line)
        if fmt["kind"] != "lemonade":  # Lemonade's copy is the same file again, in its own cache
            total += download_table.approx_bytes(fmt)
        if ask_hub and fmt["kind"] == "repo":
            say(_hub_today(fmt, library))
    extra = (
        "; Lemonade keeps a second copy of the GGUF file in its own cache"
        if any(f["kind"] == "lemonade" for _, f in chosen)
        else ""
    )
    say(f"==> about {total / 1e9:.1f} GB to download for {what} into the library{extra}")
    return 0


def _hub_today(fmt: dict, library: Path) -> str:
    """The line comparing ``hf download … --dry-run``'s count and total with the table's."""
    rc, out = model_fetch.run_tool(download_table.hf_argv(fmt, library, dry_run=True), lambda s: None)
    got = download_table.parse_hf_dry_run(out) if rc == 0 else None
    if got is None:
        return f"    hub today: no dry-run total (hf exit {rc})"
    same = "as listed" if got["files"] == fmt["files"] else f"listed {fmt['files']}: the repository changed"
    return f"    hub today: {got['files']} files (out of {got['out_of']}) totalling {got['total']} ({same})"


def fetch_all(
    chosen: list[tuple[str, dict]], library: Path, what: str, labbook: str | None, hub: str | None, say: Say
) -> int:
    """Fetch and check each format, say what passed, record it; 1 if any format failed."""
    say(f"==> {what}: {len(chosen)} format(s) into {library}")
    failed = []
    for key, fmt in chosen:
        say(f"==> {key}: {fmt['title']} (listed: {download_table.listed(fmt)})")
        try:
            rec = model_fetch.fetch(key, fmt, library, say, hub)
        except HarnessError as exc:
            say(f"    FAIL {exc}")
            failed.append(key)
            continue
        _say_fetched(rec, say)
        if labbook:
            append_record(labbook, rec, ModelFetch.KIND)
    if failed:
        say(f"==> {len(failed)} of {len(chosen)} format(s) failed: {', '.join(failed)}")
        return 1
    say(
        f"==> all {len(chosen)} format(s) present and checked"
        + (f"; recorded in {labbook}" if labbook else "")
    )
    return 0


def _say_fetched(rec: dict, say: Say) -> None:
    got = ModelFetch.read(rec).result
    say(
        f"    ok: {got.path}"
        + (f", {got.files} files, {got.bytes:,} bytes" if got.bytes else "")
        + ("" if got.downloaded else " (already present, nothing downloaded)")
    )
    for check in got.checks:
        say(f"    pass: {check}")
