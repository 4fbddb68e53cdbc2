"""``harness models``: get the model in each format a track uses, checked and recorded."""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError
from harness.io.notebook import append_record
from harness import options
from harness.options.shared import DRY_RUN, LABBOOK, LIBRARY
from harness.options.shared import FORMATS


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="download the model in each format a track uses, verify it, record it")
    p.add_argument("--track", help="s, n, x or m: the formats that track needs (default: every format)")
    options.to_argparse(p, FORMATS, command="models")
    options.to_argparse(p, LIBRARY, command="models")
    options.to_argparse(p, DRY_RUN, command="models")
    p.add_argument(
        "--ask-hub",
        action="store_true",
        help="with --dry-run: also run `hf download … --dry-run` for today's file count and total",
    )
    options.to_argparse(p, LABBOOK, command="models")
    p.add_argument(
        "--hub", dest="endpoint", help="hub address for checksums (default $HF_ENDPOINT or huggingface.co)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from harness.io import download_table

    table = download_table.load_table()
    chosen = download_table.formats_for(
        table, args.track and args.track.lower().removeprefix("track-"), args.format
    )
    library = Path(args.library).expanduser()
    track = args.track.lower().removeprefix("track-") if args.track else None
    what = f"track {track.upper()}" if track else "every format"
    if args.dry_run:
        return _dry_run(args, table, chosen, library, what)
    return _fetch_all(args, chosen, library, what)


def _dry_run(args, table: dict, chosen: list[tuple[str, dict]], library: Path, what: str) -> int:
    """Print each format's plan and the listed sizes; with --ask-hub, hf's own dry-run totals."""
    from harness.io import download_table

    print(
        f"==> {what}: {len(chosen)} format(s) into {library} (dry run: nothing is downloaded; "
        f"sizes as the hub listed them on {table['listed_on']})"
    )
    total = 0.0
    for key, fmt in chosen:
        for line in download_table.plan_lines(key, fmt, library):
            print(line if line.startswith("    ") else "  " + line)
        if fmt["kind"] != "lemonade":  # Lemonade's copy is the same file again, in its own cache
            total += download_table.approx_bytes(fmt)
        if args.ask_hub and fmt["kind"] == "repo":
            print(_hub_today(fmt, library))
    extra = (
        "; Lemonade keeps a second copy of the GGUF file in its own cache"
        if any(f["kind"] == "lemonade" for _, f in chosen)
        else ""
    )
    print(f"==> about {total / 1e9:.1f} GB to download for {what} into the library{extra}")
    return 0


def _hub_today(fmt: dict, library: Path) -> str:
    """The line comparing ``hf download … --dry-run``'s count and total with the table's."""
    from harness.io import download_table, model_fetch

    rc, out = model_fetch.run_tool(download_table.hf_argv(fmt, library, dry_run=True), lambda s: None)
    got = download_table.parse_hf_dry_run(out) if rc == 0 else None
    if got is None:
        return f"    hub today: no dry-run total (hf exit {rc})"
    same = "as listed" if got["files"] == fmt["files"] else f"listed {fmt['files']}: the repository changed"
    return f"    hub today: {got['files']} files (out of {got['out_of']}) totalling {got['total']} ({same})"


def _fetch_all(args, chosen: list[tuple[str, dict]], library: Path, what: str) -> int:
    """Fetch and check each format, print what passed, record it; 1 if any format failed."""
    from harness.io import download_table, model_fetch

    print(f"==> {what}: {len(chosen)} format(s) into {library}")
    failed = []
    for key, fmt in chosen:
        print(f"==> {key}: {fmt['title']} (listed: {download_table.listed(fmt)})")
        try:
            rec = model_fetch.fetch(key, fmt, library, print, args.endpoint)
        except HarnessError as exc:
            print(f"    FAIL {exc}")
            failed.append(key)
            continue
        _print_fetched(rec)
        if args.labbook:
            append_record(args.labbook, rec, "model-fetch")
    if failed:
        print(f"==> {len(failed)} of {len(chosen)} format(s) failed: {', '.join(failed)}")
        return 1
    print(
        f"==> all {len(chosen)} format(s) present and checked"
        + (f"; recorded in {args.labbook}" if args.labbook else "")
    )
    return 0


def _print_fetched(rec: dict) -> None:
    print(
        f"    ok: {rec['path']}"
        + (f", {rec['files']} files, {rec['bytes']:,} bytes" if rec["bytes"] else "")
        + ("" if rec["downloaded"] else " (already present, nothing downloaded)")
    )
    for check in rec["checks"]:
        print(f"    pass: {check}")
