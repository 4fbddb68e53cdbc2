"""``harness models``: get the model in each format a track uses, checked and recorded."""

from __future__ import annotations

import os
from pathlib import Path

from harness.io import download_table, model_library


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="download the model in each format a track uses, verify it, record it")
    p.add_argument("--track", help="s, n, x or m: the formats that track needs (default: every format)")
    p.add_argument(
        "--format",
        action="append",
        dest="formats",
        metavar="KEY",
        help="only this format (repeatable): gguf, awq, bf16, mlx, exl3, lemonade",
    )
    p.add_argument(
        "--library",
        default=os.environ.get("HARNESS_MODEL_LIBRARY", os.path.expanduser("~/models")),
        help="the model library, laid out <owner>/<repo> as the course pages do (default ~/models)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be downloaded, with the sizes the hub listed; download nothing",
    )
    p.add_argument(
        "--ask-hub",
        action="store_true",
        help="with --dry-run: also run `hf download … --dry-run` for today's file count and total",
    )
    p.add_argument("--labbook", help="append a model-fetch record per format to this notebook")
    p.add_argument(
        "--hub", dest="endpoint", help="hub address for checksums (default $HF_ENDPOINT or huggingface.co)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    table = download_table.load_table()
    track = args.track.lower().removeprefix("track-") if args.track else None
    chosen = download_table.formats_for(table, track, args.formats)
    library = Path(args.library).expanduser()
    what = f"track {track.upper()}" if track else "every format"
    if args.dry_run:
        return model_library.dry_run(table, chosen, library, what, args.ask_hub, print)
    return model_library.fetch_all(chosen, library, what, args.labbook, args.endpoint, print)
