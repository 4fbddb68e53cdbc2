"""Single-user engine comparison from records: latest per engine, memory source, tables, the check.
Pure functions over record dicts."""

from __future__ import annotations

import json

from tabulate import tabulate

from harness import lab
from harness.measure import server_timings
from harness.energy import engine_tables as engine_energy

from harness.records.base import HEAD
from harness.records.engine import FEATURES, READINGS, SNAPSHOT, SPEED, VERDICT

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

CACHE_LIMIT = 64  # more reused prompt tokens than this: the run measured the prefix cache, not prefill


def latest_per_engine(speed_records: list[dict], feature_records: list[dict]):
    """(engines in first-seen order, engine -> {short, long}, engine -> features), newest record wins."""
    order: list[str] = []
    speed: dict[str, dict] = {}
    features: dict[str, dict] = {}
    for rec in sorted(speed_records + feature_records, key=lambda r: r.get(SPEED.measured_on, "")):
        engine = rec.get("engine", "?")
        if engine not in order:
            order.append(engine)
        if rec.get(HEAD.probe) == "features":
            features[engine] = rec
        else:
            speed.setdefault(engine, {})[rec[SPEED.test]] = rec
    return order, speed, features


VARY = 0.05  # the engines lab: decode rates that vary "by more than a few per cent" between runs


def rerun_rules(speed_records: list[dict]) -> list[tuple[str, str, str]]:
    """The engines lab's troubleshooting row on repeated measurements: an engine whose latest two
    runs of the same test decoded more than a few per cent apart (the most recent run replaces the
    row, so the earlier one is only read here)."""
    runs: dict[tuple[str, str], list[float]] = {}
    for rec in sorted(speed_records, key=lambda r: r.get(SPEED.measured_on, "")):
        if rec.get(SPEED.decode_tokens_per_s):
            runs.setdefault((rec.get("engine", "?"), rec.get(SPEED.test, "?")), []).append(
                rec[SPEED.decode_tokens_per_s]
            )
    out = []
    for (engine, test), rates in runs.items():
        if len(rates) < 2:
            continue
        before, last = rates[-2], rates[-1]
        apart = abs(last - before) / before
        if apart > VARY:
            out.append(
                (
                    "WARN",
                    engine,
                    f"{test}: decode rates vary by {apart:.0%} between runs ({before:.1f} then {last:.1f} "
                    "tok/s): another process, thermal limits or battery power; close applications, plug "
                    "in, re-run (the most recent run replaces the row)",
                )
            )
        else:
            out.append(("PASS", engine, f"{test}: the last two runs decoded within {VARY:.0%} of each other"))
    return out


def memory_added(rec: dict) -> tuple[float | None, str]:
    """The reading that best says what this server added on this kind of machine, and its source.

    Discrete NVIDIA: the per-process figure (it counts the server wherever it runs), else the
    device figure (WSL2 lists no processes). AMD: VRAM plus GTT. DGX Spark and other Linux
    without a device total: MemAvailable. Mac: vm_stat's active + wired + compressed."""
    added, loaded = rec.get(SPEED.memory_delta_mb) or {}, rec.get(SPEED.memory) or {}
    r = READINGS
    if loaded.get(r.gpu_total_mb):
        if (added.get(r.gpu_process_mb) or 0) > 0:
            return added[r.gpu_process_mb], "nvidia-smi per-process"
        if added.get(r.gpu_used_mb) is not None:
            return added[r.gpu_used_mb], "nvidia-smi device"
    if r.rocm_vram_used_mb in added or r.rocm_gtt_used_mb in added:
        return added.get(r.rocm_vram_used_mb, 0) + added.get(r.rocm_gtt_used_mb, 0), "rocm-smi VRAM+GTT"
    if added.get(r.mac_used_mb) is not None:  # a Mac: psutil's "available" is not the lab's figure there
        return added[r.mac_used_mb], "vm_stat active+wired+compressed"
    if added.get(SNAPSHOT.mem_available_mb) is not None:
        return added[SNAPSHOT.mem_available_mb], "MemAvailable"
    return None, "no idle snapshot"


def _v(value, digits: int = 2):
    if value is None:
        return "—"
    return f"{value:.{digits}f}" if isinstance(value, float) else value


def _yes(section: dict | None) -> str:
    return "—" if not section else ("yes" if section.get(VERDICT.supported) else "no")


def speed_rows(order, speed, ceilings: dict | None = None) -> list[list]:
    rows = []
    for engine in order:
        pair = speed.get(engine)
        if not pair:
            continue
        s, lo = pair.get("short", {}), pair.get("long", {})
        rec = lo or s
        mem, source = memory_added(rec)
        row = [
            engine,
            rec.get(SPEED.quant) or "—",
            rec.get(SPEED.backend) or "—",
            _v(s.get(SPEED.ttft_s), 3),
            _v(lo.get(SPEED.ttft_s), 3),
            _v(rec.get(SPEED.prefill_tokens_per_s), 1),
            _v(s.get(SPEED.decode_tokens_per_s)),
            _v(lo.get(SPEED.decode_tokens_per_s)),
            _v(mem),
            source,
            _resident(rec),
        ]
        if ceilings is not None:
            ceiling = ceilings.get(engine)
            rate = s.get(SPEED.decode_tokens_per_s)
            row.append(f"{rate / ceiling:.2f} of {ceiling:.1f}" if rate and ceiling else "—")
        rows.append(row)
    return rows


SPEED_HEAD = [
    "Engine",
    "Quant",
    "Backend",
    "TTFT short s",
    "TTFT long s",
    "Prefill tok/s",
    "Decode short tok/s",
    "Decode long tok/s",
    "Memory added MB",
    "Memory source",
    "Resident MB (processes)",
]


# The engines lab's recording sheet: its title and the figures each row wants, in its order.
SPEED_SHEET = lab.worksheet("engines_speed")
FEATURES_SHEET = lab.worksheet("engines_features")
FEATURE_HEAD = ["Engine", "/v1/models", "Tool calling", "Tool calling, streamed", "JSON schema", "Detail"]


def _resident(rec: dict) -> str:
    """RSS of the server's whole process tree (and PSS, the tree's share of shared pages) with the count."""
    tree = rec.get(SPEED.process_tree) or {}
    rss = tree.get("rss_mb", rec.get(SPEED.process_resident_mb))
    if rss is None and tree.get("container_mb") is None:
        return "—"
    pss = f", PSS {tree['pss_mb']}" if tree.get("pss_mb") else ""
    cgroup = f", container {tree['container_mb']}" if tree.get("container_mb") is not None else ""
    rss = "—" if rss is None else rss
    return f"{rss}{pss}{cgroup} ({tree['processes']})" if tree.get("processes") else f"{rss}{pss}{cgroup}"


def feature_rows(order, features) -> list[list]:
    rows = []
    for engine in order:
        f = features.get(engine)
        if f:
            details = [
                f[s].get(VERDICT.detail)
                for s in (FEATURES.tool_calling, FEATURES.streaming_tool_calling, FEATURES.structured_output)
                if (f.get(s) or {}).get(VERDICT.detail)
            ]
            rows.append(
                [
                    engine,
                    _yes(f.get(FEATURES.models_endpoint)),
                    _yes(f.get(FEATURES.tool_calling)),
                    _yes(f.get(FEATURES.streaming_tool_calling)),
                    _yes(f.get(FEATURES.structured_output)),
                    "; ".join(details) or "—",
                ]
            )
    return rows


def timing_lines(order, speed) -> list[str]:
    """Per engine whose server sent its own timings (llama-server), the long test's prefill and decode
    against the client's, and whether they agree within a few per cent."""
    found = []
    for engine in order:
        lo = (speed.get(engine) or {}).get("long") or {}
        said = server_timings.words(server_timings.of(lo))
        if said:
            found.append(
                f"- {engine}: server's own timings (long test) prefill "
                f"{_v(lo.get('server_prefill_tokens_per_s'), 1)} tok/s, decode "
                f"{_v(lo.get('server_decode_tokens_per_s'))} tok/s; {said}"
            )
    return ["Server timings against the client's", "", *found, ""] if found else []


def _github(head: list[str], rows: list[list]) -> str:
    return tabulate(rows, headers=head, tablefmt="github", disable_numparse=True)


def render(order, speed, features, ceilings: dict | None = None) -> str:
    """The tables; ``ceilings`` (engine -> the decode ceiling of the format it served) adds a column."""
    head = SPEED_HEAD + (["decode short / own ceiling tok/s"] if ceilings is not None else [])
    sp, fe = speed_rows(order, speed, ceilings), feature_rows(order, features)
    as_js = lambda v: "'—'" if v in (None, "—") else (repr(v) if isinstance(v, str) else json.dumps(v))  # noqa: E731
    parts = [
        "Speed and memory (medians; prefill from the short/long difference)",
        "",
        tabulate(sp, headers=head, tablefmt="github", disable_numparse=True),
        "",
        *timing_lines(order, speed),
        *engine_energy.section(order, speed, _github),
        "API features",
        "",
        tabulate(
            fe,
            headers=FEATURE_HEAD,
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        "{} ({})".format(SPEED_SHEET[0], ", ".join(SPEED_SHEET[1])),
    ]
    for engine in order:
        pair = speed.get(engine) or {}
        s, lo = pair.get("short", {}), pair.get("long", {})
        rec = lo or s
        if rec:
            values = [
                f"{engine}, {rec.get(SPEED.quant) or '?'}",
                s.get(SPEED.ttft_s),
                lo.get(SPEED.ttft_s),
                rec.get(SPEED.prefill_tokens_per_s),
                s.get(SPEED.decode_tokens_per_s),
                lo.get(SPEED.decode_tokens_per_s),
                memory_added(rec)[0],
            ]
            parts.append("  [" + ", ".join(as_js(v) for v in values) + "],")
    parts.append(FEATURES_SHEET[0])
    parts += ["  [" + ", ".join(as_js(v) for v in row) + "]," for row in fe]
    return "\n".join(parts)


# Complexity allowed: one rule per line of the lab's checklist, in its order.
def check(  # noqa: C901
    order, speed, features, allow_cpu: bool = False, ceilings: dict | None = None
) -> list[tuple[str, str, str]]:
    """The lab's rules as (PASS | WARN | FAIL, engine, finding)."""
    out: list[tuple[str, str, str]] = []
    say = lambda level, engine, text: out.append((level, engine, text))  # noqa: E731
    if not order:
        say("FAIL", "-", "no engine-speed or features records for this lab in the notebook")
    for engine in order:
        pair = speed.get(engine, {})
        if set(pair) != {"short", "long"}:
            say(
                "FAIL",
                engine,
                f"speed tests present: {sorted(pair) or 'none'}; both short and long are needed",
            )
        for test, rec in sorted(pair.items()):
            if rec.get(SPEED.ttft_s) is None or rec.get(SPEED.decode_tokens_per_s) is None:
                say("FAIL", engine, f"{test}: TTFT or decode rate missing")
            if not rec.get(SPEED.engine_version) or not rec.get(SPEED.quant):
                say("FAIL", engine, f"{test}: engine version or quant not recorded")
            backend = (rec.get(SPEED.backend) or "").strip()
            cpu_only = backend.lower() == "cpu"
            if backend == "" or (cpu_only and not allow_cpu):
                say(
                    "FAIL",
                    engine,
                    f"{test}: backend '{backend}' does not name an accelerator (--allow-cpu for the "
                    "CPU path)",
                )
            if rec.get(SPEED.prompt_tag) is False:
                say("FAIL", engine, f"{test}: measured with --reuse-prompt, i.e. the cache, not prefill")
            cached = rec.get(SPEED.max_cached_prompt_tokens)
            if cached is None:
                say("WARN", engine, f"{test}: no cached-token count came back; read the server log")
            elif cached > CACHE_LIMIT:
                say(
                    "FAIL",
                    engine,
                    f"{test}: {cached} prompt tokens were served from cache (limit {CACHE_LIMIT})",
                )
            if rec.get(SPEED.completion_tokens) != rec.get(SPEED.max_tokens):
                say(
                    "WARN",
                    engine,
                    f"{test}: {rec.get(SPEED.completion_tokens)} tokens generated instead of "
                    f"{rec.get(SPEED.max_tokens)} (finish {rec.get(SPEED.finish_reason)})",
                )
            if rec.get(SPEED.token_source) != "usage":
                say("WARN", engine, f"{test}: token counts estimated from chunks")
        rec = pair.get("long") or pair.get("short")
        if rec:
            if rec.get(SPEED.prefill_tokens_per_s) is None:
                say("WARN", engine, "prefill could not be computed from the short/long difference")
            mem, source = memory_added(rec)
            if not rec.get(SPEED.memory_delta_mb):
                say("WARN", engine, "no memory added figure (no idle snapshot given)")
            elif mem is not None and mem <= 0:
                say("WARN", engine, f"memory added is {mem} MB by {source}; take a fresh idle snapshot")
        timing = server_timings.of(pair.get("long") or {})
        if timing:  # llama-server's own timings against the client's: "within a few per cent"
            say("PASS" if timing.agree else "WARN", engine, str(server_timings.words(timing)))
        ceiling = (ceilings or {}).get(engine)
        if ceiling and pair.get("short", {}).get(SPEED.decode_tokens_per_s):
            ratio = pair["short"][SPEED.decode_tokens_per_s] / ceiling
            say(
                "FAIL" if ratio > 1 else "PASS",
                engine,
                f"decode is {ratio:.2f} of the ceiling of its own format, {ceiling:.1f} tok/s"
                + ("; above 1 means the bandwidth figure is wrong" if ratio > 1 else ""),
            )
        elif ceilings is not None and engine not in ceilings:
            say("WARN", engine, "no ceiling: its quant names no format of the model table")
        feat = features.get(engine)
        if not feat:
            say("FAIL", engine, "no features record (run harness probe)")
        else:
            for section in (FEATURES.tool_calling, FEATURES.structured_output):
                if not isinstance((feat.get(section) or {}).get(VERDICT.supported), bool):
                    say("FAIL", engine, f"features record lacks a yes/no for {section}")
        if feat and set(pair) == {"short", "long"}:
            say("PASS", engine, "short and long speed records and a features record present")
    return out
