#!/usr/bin/env python3
"""A minimal asyncio streaming client, kept as a reference to measure ours against (not used by
the harness). It does what a careful hand-written load script does: every user starts at once,
sends its requests one after another on one keep-alive connection, stamps the time just before
writing each request and when it reads the first line carrying text, and nothing more (standard
library only, no kernel stamps, no accounting). Prints one JSON object per request.

    python scripts/reference_client.py --url http://127.0.0.1:8099 --model M --concurrency 16 --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import urlsplit


async def user(host: str, port: int, path: str, body: bytes, rounds: int, out: list) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    try:
        for _ in range(rounds):
            t_send = time.perf_counter()
            writer.write(head + body)
            await writer.drain()
            t_first, rid, chunked = None, None, False
            while True:  # the headers
                line = await reader.readline()
                if line.lower().startswith(b"transfer-encoding: chunked"):
                    chunked = True
                if line in (b"\r\n", b""):
                    break
            assert chunked, "the reference client reads chunked streams only"
            while True:  # the chunks, one SSE line at a time
                size = int((await reader.readline()).strip() or b"0", 16)
                if size == 0:
                    await reader.readline()
                    break
                data = await reader.readexactly(size + 2)
                for line in data.split(b"\n"):
                    if not line.startswith(b"data: {"):
                        continue
                    event = json.loads(line[6:])
                    rid = rid or event.get("id")
                    delta = (event.get("choices") or [{}])[0].get("delta") or {}
                    if t_first is None and delta.get("content"):
                        t_first = time.perf_counter()
            ttft = None if t_first is None else t_first - t_send
            out.append({"id": rid, "ttft_s": ttft, "departed_monotonic_s": t_send})
    finally:
        writer.close()


async def main_async(args) -> list:
    parts = urlsplit(args.url)
    path = parts.path.rstrip("/") + "/v1/chat/completions"
    body = json.dumps(
        {
            "model": args.model,
            "messages": [{"role": "user", "content": "benchmark"}],
            "max_tokens": args.max_tokens,
            "stream": True,
        }
    ).encode()
    out: list = []
    await asyncio.gather(
        *(user(parts.hostname, parts.port, path, body, args.rounds, out) for _ in range(args.concurrency))
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--url", required=True, help="server root, e.g. http://127.0.0.1:8099")
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=4, help="requests per user")
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    for row in asyncio.run(main_async(args)):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
