#!/usr/bin/env python3
"""SIGTERM (or SIGINT) at many moments of `harness sweep`'s start, optionally with busy loops on
every core so the start stretches: every try must end with 130 (or the signal's own status, when
it came before Python ran a line of ours), within a bound, with no traceback. Prints one line per
bad try and a count; exit 1 when any was bad.

    .venv/bin/python scripts/signal_storm.py --tries 150 --busy 3
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    p.add_argument("--tries", type=int, default=150)
    p.add_argument("--busy", type=int, default=0, help="busy loops beside it (a loaded machine)")
    p.add_argument("--signal", choices=["SIGTERM", "SIGINT"], default="SIGTERM")
    p.add_argument("--bound", type=float, default=20.0, help="seconds a try may take after its signal")
    args = p.parse_args()
    sig = getattr(signal, args.signal)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    bad = 0
    try:
        for i in range(args.tries):
            delay = 0.05 + (i % 75) * 0.02  # 0.05 to 1.53 s into the start, over and over
            cmd = [sys.executable, "-m", "harness.cli.entry", "sweep", "--base-url", "http://127.0.0.1:9/v1"]
            cmd += ["--model", "m", "--concurrency", "1", "--requests", "1", "--metrics-url", "none"]
            cmd += ["--no-endpoint-check", "--labbook", os.devnull]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(delay)
            proc.send_signal(sig)
            try:
                _, err = proc.communicate(timeout=args.bound)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                bad += 1
                print(f"{delay:.2f} s: still running {args.bound:.0f} s after the signal")
                continue
            if "Traceback" in err or proc.returncode not in (130, -sig):
                bad += 1
                print(f"{delay:.2f} s: exit {proc.returncode}: {err.strip()[-200:]!r}")
    finally:
        for b in busy:
            b.kill()
    print(f"{bad} bad of {args.tries} ({args.signal}, {args.busy} busy loops)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
