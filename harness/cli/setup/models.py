"""``harness setup models``: get the model in each format a track uses, checked and recorded."""

from __future__ import annotations

from pathlib import Path

from harness import options
from harness.engines.models import download_table, library as model_library
from harness.options.shared import DRY_RUN, FORMATS, LABBOOK, LIBRARY


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
    table = download_table.load_table()
    track = args.track.lower().removeprefix("track-") if args.track else None
    chosen = download_table.formats_for(table, track, args.format)
    library = Path(args.library).expanduser()
    what = f"track {track.upper()}" if track else "every format"
    if args.dry_run:
        return model_library.dry_run(table, chosen, library, what, args.ask_hub, print)
    return model_library.fetch_all(chosen, library, what, args.labbook, args.endpoint, print)
