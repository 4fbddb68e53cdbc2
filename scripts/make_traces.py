#!/usr/bin/env python3
"""Make the small traces in data/traces/ from stated parameters (nothing downloaded).

Every file it writes starts from a seeded generator, so running it again gives the same bytes:

* ``mooncake-small.jsonl``: Mooncake's format (``timestamp`` ms, ``input_length``,
  ``output_length``, ``hash_ids``), Poisson arrivals at ``--rate``; each request opens with one
  of ``--groups`` shared preambles of ``--shared-blocks`` blocks (equal hash ids: a prefix a cache
  can reuse) and goes on with blocks of its own;
* ``plain-small.txt``: the plain format (``SECONDS INPUT_TOKENS OUTPUT_TOKENS``), the same
  arrivals and lengths with no shared blocks;
* ``data/conversations/sharegpt-small.json``: ``--conversations`` conversations in ShareGPT's
  format (2 to 4 user turns of made-up words, each with a reply), for ``--sharegpt``.

    .venv/bin/python scripts/make_traces.py [--out data/traces] [--requests 100] [--rate 50] ...

Lengths: input uniform over whole blocks from the shared preamble up to ``--max-blocks``;
output uniform from ``--min-output`` to ``--max-output``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from harness.workloads.schedules import arrival_offsets
from harness.workloads.request import words_text


def rows(args) -> list[dict]:
    rng = random.Random(args.seed)
    offsets = arrival_offsets(args.rate, args.requests, poisson=True, seed=args.seed)
    next_id = args.groups * args.shared_blocks
    out = []
    for t in offsets:
        group = rng.randrange(args.groups)
        shared = list(range(group * args.shared_blocks, (group + 1) * args.shared_blocks))
        own = rng.randint(1, max(1, args.max_blocks - args.shared_blocks))
        ids = shared + list(range(next_id, next_id + own))
        next_id += own
        last = rng.randint(1, args.block_tokens)  # the last block is partly filled
        out.append(
            {
                "timestamp": round(t * 1000),
                "input_length": (len(ids) - 1) * args.block_tokens + last,
                "output_length": rng.randint(args.min_output, args.max_output),
                "hash_ids": ids,
            }
        )
    return out


def sharegpt(args) -> list[dict]:
    """Conversations in ShareGPT's format: 2 to 4 user turns of 20 to 60 words, each with a reply."""
    rng = random.Random(args.seed + 1)
    out = []
    for i in range(args.conversations):
        turns = []
        for _ in range(rng.randint(2, 4)):
            turns.append({"from": "human", "value": words_text(rng.randint(20, 60), rng)})
            turns.append({"from": "gpt", "value": words_text(rng.randint(10, 40), rng)})
        out.append({"id": f"synthetic-{i:03d}", "conversations": turns})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--out", default="data/traces")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rate", type=float, default=50.0, help="mean arrivals per second (Poisson)")
    ap.add_argument("--groups", type=int, default=4, help="distinct shared preambles")
    ap.add_argument("--shared-blocks", type=int, default=2, help="blocks of each shared preamble")
    ap.add_argument("--max-blocks", type=int, default=4, help="most blocks in one prompt")
    ap.add_argument("--block-tokens", type=int, default=64, help="tokens per hash id")
    ap.add_argument("--min-output", type=int, default=8)
    ap.add_argument("--max-output", type=int, default=32)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--conversations", type=int, default=16, help="conversations in the ShareGPT set")
    ap.add_argument("--conversations-out", default="data/conversations")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    made = rows(args)
    header = (
        f"# made by scripts/make_traces.py --requests {args.requests} --rate {args.rate:g} --groups "
        f"{args.groups} --shared-blocks {args.shared_blocks} --max-blocks {args.max_blocks} --block-tokens "
        f"{args.block_tokens} --min-output {args.min_output} --max-output {args.max_output} "
        f"--seed {args.seed}"
    )
    (out / "mooncake-small.jsonl").write_text("".join(json.dumps(r) + "\n" for r in made))
    plain = [f"{r['timestamp'] / 1000:.3f} {r['input_length']} {r['output_length']}" for r in made]
    lines = [header, "# SECONDS INPUT_TOKENS OUTPUT_TOKENS", *plain]
    (out / "plain-small.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(made)} requests to {out}: mooncake-small.jsonl, plain-small.txt ({header[2:]})")
    talk = Path(args.conversations_out)
    talk.mkdir(parents=True, exist_ok=True)
    (talk / "sharegpt-small.json").write_text(json.dumps(sharegpt(args), indent=1) + "\n")
    print(f"wrote {args.conversations} conversations to {talk}/sharegpt-small.json (ShareGPT's format)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
