"""After a rehearsal (``make track-s REHEARSE=1 QUICK=1``): what CI holds it to, beyond its own
passing. The run passed (every step passed or was skipped with its reason), its report opens with
the rehearsal banner, every record in its notebook says rehearsal and, for an engine's record, the
stand-in that served it, and no container of ours is left. ``--own-stand-in BLOCK``: that block
ran on its own stand-in from the overlay's ``blocks:`` (the Ryzen track's control on the Vulkan build), and
every record it wrote names that stand-in. ``--real-mlx``: the mlx-lm blocks ran on the real
mlx_lm.server on MLX's CPU backend (make mlx-cpu), not its imitation: CI's rehearsal then stands for
tests/integration/mlx/test_mlx_cpu.py's own rehearsal test, which it skips.

    python scripts/check_rehearsal.py track-s [RUN_DIR] [--own-stand-in BLOCK] [--real-mlx]
    (RUN_DIR: the newest run by default)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path


# Records about a whole run or the notebook rather than one engine carry no stand-in, nor do the
# practice server's (it is the practice server on every machine).
NO_STAND_IN = {"curve-summary"}
NO_ENGINE = (None, "practice")


def notebook_records(path: Path) -> list[dict]:
    """The notebook's records (its JSON lines; prose lines skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"record": "unreadable line"})
    return out


def record_kind(rec: dict) -> str:
    """A record's kind: its "record" field, else the seed's shapes (an engine speed, a probe's
    features) that have none, else a level."""
    if rec.get("record"):
        return rec["record"]
    if "decode_tokens_per_s" in rec:
        return "engine-speed"
    return "features" if rec.get("probe") == "features" else "level"


def own_stand_in_problems(manifest: dict, records: list[dict], block: str) -> list[str]:
    """The block ran on its own stand-in: the manifest lists it, its allocation record (labelled
    with the block's id) and its engine-speed records name it, and so does every record labelled
    with the block's id."""
    stand_ins = (manifest.get("rehearsal") or {}).get("stand_ins", {})
    own = [s["stand_in"] for name, s in stand_ins.items() if name.endswith(f", block {block}")]
    if not own:
        start = next((s for s in manifest["steps"] if s["id"] == f"{block}/start"), {})
        return [f"block {block} did not run on its own stand-in (its start: {start.get('reason')})"]
    mine = [r for r in records if r.get("stand_in") == own[0]]
    kinds = {record_kind(r) for r in mine}
    found = [
        f"block {block} wrote no {k} record naming its stand-in"
        for k in ("allocation", "engine-speed")
        if k not in kinds
    ]
    found += [
        f"a {record_kind(r)} record labelled {block} names the stand-in {r.get('stand_in')!r}"
        for r in records
        if r.get("label") == block and r.get("stand_in") != own[0]
    ]
    return found


def real_mlx_problems(records: list[dict], report: str) -> list[str]:
    """The mlx-lm engine-speed records came from the real mlx_lm.server on MLX's CPU backend (its
    label, its pinned versions, the CPU backend, the float32 weights resident), and the report's
    banner names it, not the imitation."""
    from harness.engines import mlx_cpu

    speeds = [r for r in records if r.get("engine") == "mlx-lm" and record_kind(r) == "engine-speed"]
    found = [] if speeds else ["no engine-speed record of mlx-lm"]
    version = f"mlx-lm {mlx_cpu.MLX_LM_VERSION} / mlx {mlx_cpu.MLX_VERSION}"
    for r in speeds:
        if mlx_cpu.LABEL not in (r.get("stand_in") or ""):
            found.append(f"an mlx-lm engine-speed record names the stand-in {r.get('stand_in')!r}")
        said, backend, resident = r.get("engine_version"), r.get("backend"), r.get("process_resident_mb")
        if said != version or backend != "CPU":
            found.append(f"an mlx-lm engine-speed record says {said!r} on {backend!r}")
        if not (resident or 0) > 800:
            found.append(f"an mlx-lm engine-speed record holds {resident} MB, not the weights")
    banner = report.split("## ")[0]
    if mlx_cpu.LABEL not in banner or "imitating mlx_lm.server" in banner:
        found.append("the report's banner does not name the real mlx_lm.server as the stand-in")
    return found


def problems(run_dir: Path, own_stand_in: str | None = None, real_mlx: bool = False) -> list[str]:
    found = []
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    if manifest["status"] != "passed":
        not_run = [
            f"{s['id']} ({s['status']}: {s.get('reason')})"
            for s in manifest["steps"]
            if s["status"] not in ("passed", "skipped")
        ]
        found.append(f"the run {manifest['status']}: " + "; ".join(not_run)[:600])
    skipped = [s for s in manifest["steps"] if s["status"] == "skipped" and not s.get("reason")]
    found += [f"step {s['id']} skipped with no reason" for s in skipped]
    if "rehearsal" not in manifest:
        found.append("the manifest has no rehearsal entry")
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    if "**REHEARSAL, not " not in report.split("## ", 1)[0]:
        found.append("report.md does not open with the rehearsal banner")
    records = notebook_records(run_dir / "labbook.md")
    if not records:
        found.append("the notebook holds no record")
    for rec in records:
        kind = rec.get("record", "level")
        if rec.get("rehearsal") is not True:
            found.append(f"a {kind} record ({rec.get('label', '?')}) does not say rehearsal")
        elif kind not in NO_STAND_IN and rec.get("engine") not in NO_ENGINE and not rec.get("stand_in"):
            found.append(f"a {kind} record of {rec.get('engine')} names no stand-in")
    if own_stand_in:
        found += own_stand_in_problems(manifest, records, own_stand_in)
    if real_mlx:
        found += real_mlx_problems(records, report)
    listing = ["docker", "ps", "-a", "--format", "{{.Names}} ({{.Status}})"]
    ran = None
    if shutil.which("docker"):  # no Docker here: no container can be left
        ran = subprocess.run(listing, capture_output=True, text=True, check=False)
    left = ran.stdout.splitlines() if ran and ran.returncode == 0 else []
    if left:
        found.append(f"{len(left)} container(s) left after the run (docker ps -a): {', '.join(left)[:600]}")
    return found


def main(argv: list[str]) -> int:
    own = None
    real_mlx = "--real-mlx" in argv
    argv = [a for a in argv if a != "--real-mlx"]
    if "--own-stand-in" in argv:
        i = argv.index("--own-stand-in")
        own, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    if not argv:
        print("\n".join(x.strip() for x in __doc__.strip().splitlines()[-2:]), file=sys.stderr)
        return 2
    runs = sorted(p for p in Path("runs").glob(f"*-rehearsal-{argv[0]}*") if (p / "manifest.json").is_file())
    run_dir = Path(argv[1]) if len(argv) > 1 else (runs[-1] if runs else None)
    if run_dir is None:
        print(f"no rehearsal run of {argv[0]} under runs/", file=sys.stderr)
        return 2
    found = problems(run_dir, own, real_mlx)
    for line in found:
        print(f"FAIL  {line}")
    print(f"{'PASS' if not found else 'FAIL'}  rehearsal {run_dir}: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
