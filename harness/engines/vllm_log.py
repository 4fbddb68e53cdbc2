"""Read vLLM's start-up log, V0 and V1, on GPUs, ROCm and the CPU build. Pure: text in, facts out.

V1 states its pool in tokens (``GPU KV cache size: 34,952 tokens``). V0 stated it in blocks
(``# GPU blocks: 2048, # CPU blocks: 512``; ROCm builds say ``# rocm blocks``), and the block's
size in tokens only in its settings, so the tokens are blocks x block size when the log gives the
size (or its ``Maximum concurrency`` line lets the size be worked out), and unknown otherwise.
"""

from __future__ import annotations

import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_TOKENS = re.compile(r"\b(\w+) KV cache size: ([\d,]+) tokens")  # GPU, CPU (the CPU build), XPU, TPU
_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
# "# GPU blocks: 2048, # CPU blocks: 512"; CUDA and ROCm builds name themselves; pastes lose the "#"
_BLOCKS = re.compile(
    r"(?:# )?\b(GPU|CPU|CUDA|rocm|ROCm|XPU|TPU|HPU|neuron) blocks: (\d+)(?:, # CPU blocks: (\d+))?"
)
_AVAIL = re.compile(r"Available KV cache memory: (-?[\d.]+) GiB")  # negative when the weights took it all
_RESERVED = re.compile(r"reserved for KV Cache is ([\d.]+) ?GiB|\bkv_cache_size=([\d.]+) ?GiB")
_LOAD_V1 = re.compile(r"Model loading took ([\d.]+) GiB")
_LOAD_V0 = re.compile(r"Loading model weights took ([\d.]+) (GB|MB)")
_BLOCK_SIZE = re.compile(r"""\bblock_size'?"?\s*[=:]\s*(\d+)""")
_VERSION = re.compile(
    r"vLLM API server version:? v?(\S+)|Initializing an? (?:V\d )?LLM engine \(v?([^)\s]+)\)"
)
# CPU build: "Auto set (0.85/17.84) GiB for KV cache on node 0, with 2.68 GiB requested memory ..."
_CPU_AUTO = re.compile(r"Auto set \(([\d.]+)/([\d.]+)\) GiB for KV cache")
_TOO_LONG = re.compile(
    r"max seq len \(([\d,]+)\) is larger than the maximum number of tokens that can be stored in KV cache "
    r"\(([\d,]+)\)"
)
# Start-up failures before any pool line: (kind, pattern); the first that matches names the failure.
_FAILURES = (
    (
        "free_memory_below_utilization",
        re.compile(r"Free memory on device .* is less than desired GPU memory utilization"),
    ),
    (
        "no_cache_memory",
        re.compile(
            r"No available memory for the cache blocks"
            r"|To serve at least one request with the models?'s max seq len"
        ),
    ),
    ("oom", re.compile(r"CUDA out of memory|OutOfMemoryError|HIP out of memory")),
)
# V1's form of the same failure, with the memory both sides and the length that would fit
_NEEDS = re.compile(
    r"max seq len \(([\d,]+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the available KV "
    r"cache memory \((-?[\d.]+) GiB\)\.(?: Based on the available memory, the estimated maximum model length "
    r"is ([\d,]+))?"
)
_MARKERS = re.compile(r"\bvllm\b|vLLM|EngineCore|RayWorkerWrapper|[\s\[]\w+\.py:\d+\]")


def _num(text: str) -> int:
    return int(text.replace(",", ""))


# Figures each one line states, as (key, pattern): the first group is the number (GiB, or tokens).
_FIGURES = (
    ("block_size", _BLOCK_SIZE),
    ("available_kv_gib", _AVAIL),
    ("model_loading_gib", _LOAD_V1),
    ("cpu_kv_gib", _CPU_AUTO),  # the CPU build: the pool, and (below) the total it took a share of
)


def parse(text: str) -> dict:
    """Every allocation fact the start-up log states (keys whose line is absent are left out)."""
    out: dict = {}
    if m := _TOKENS.search(text):
        out["kv_tokens"], out["kv_device"] = _num(m[2]), m[1]
    if m := _CONC.search(text):
        out["max_model_len"], out["max_concurrency"] = _num(m[1]), float(m[2])
    for key, value in _blocks(text).items():  # a V1 tokens line names the device first
        out.setdefault(key, value)
    for key, pattern in _FIGURES:
        if m := pattern.search(text):
            out[key] = int(m[1]) if key == "block_size" else float(m[1])
    if m := _CPU_AUTO.search(text):
        out["memory_total_gib"] = float(m[2])
    if m := _RESERVED.search(text):
        out["reserved_kv_gib"] = float(m[1] or m[2])
    if "model_loading_gib" not in out and (m := _LOAD_V0.search(text)):
        # V0 wrote GB and meant GiB (it divided by 2**30); older builds wrote MB (MiB)
        out["model_loading_gib"] = float(m[1]) / (1024 if m[2] == "MB" else 1)
    if m := _VERSION.search(text):
        out["version"] = m[1] or m[2]
    if failure := _failure(text):
        out["failure"] = failure
    return out


def _blocks(text: str) -> dict:
    """V0's pool in blocks, and the device the line names."""
    m = _BLOCKS.search(text)
    if not m:
        return {}
    device = {"rocm": "ROCm", "cuda": "GPU"}.get(m[1].lower(), m[1].upper())
    out: dict = {"gpu_blocks" if device != "CPU" or m[3] else "cpu_blocks": int(m[2])}
    if m[3]:
        out["cpu_blocks"] = int(m[3])
    out["kv_device"] = device
    return out


def _failure(text: str) -> dict | None:
    """The start-up failure in the log: a request longer than the pool (with its figures, in V0's or
    V1's wording), else the first known failure, with the line that says it."""
    if m := _TOO_LONG.search(text):
        return {"kind": "max_seq_len_exceeds_kv", "max_seq_len": _num(m[1]), "kv_tokens": _num(m[2])}
    if m := _NEEDS.search(text):
        return {
            "kind": "max_seq_len_exceeds_kv",
            "max_seq_len": _num(m[1]),
            "needed_gib": float(m[2]),
            "available_gib": float(m[3]),
            **({"estimated_max_len": _num(m[4])} if m[4] else {}),
        }
    for kind, pattern in _FAILURES:
        for line in text.splitlines():
            if pattern.search(line):
                return {"kind": kind, "line": line.strip()[-300:]}
    return None


def states_allocation(text: str) -> bool:
    """Whether the text states a pool (tokens or blocks) or the start-up failure about it."""
    failed = any(pattern.search(text) for _, pattern in _FAILURES)
    return bool(_TOKENS.search(text) or _BLOCKS.search(text) or _TOO_LONG.search(text) or failed)


def looks_like(text: str) -> bool:
    return bool(_MARKERS.search(text))


def block_size(facts: dict) -> int | None:
    """The block size the log gives, or the one its concurrency line implies (blocks x size / length
    = concurrency, to its two decimals), a power of two; None when neither says."""
    if facts.get("block_size"):
        return int(facts["block_size"])
    blocks, conc, length = (
        facts.get("gpu_blocks") or facts.get("cpu_blocks"),
        facts.get("max_concurrency"),
        facts.get("max_model_len"),
    )
    if not (blocks and conc and length):
        return None
    for size in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        if abs(blocks * size / length - conc) <= 0.006:
            return size
    return None


def pool_tokens(facts: dict, assumed_block_size: int | None = None) -> int | None:
    """Tokens of KV the log says the pool holds: V1's figure, else V0's blocks x their size (the
    log's, or ``assumed_block_size`` when the log does not say it)."""
    if facts.get("kv_tokens") is not None:
        return int(facts["kv_tokens"])
    blocks, size = facts.get("gpu_blocks") or facts.get("cpu_blocks"), block_size(facts) or assumed_block_size
    return blocks * size if blocks and size else None


def unread(facts: dict) -> str:
    """One line saying what is missing, naming the version when the log states it."""
    version = f" {facts['version']}" if facts.get("version") else ""
    blocks = facts.get("gpu_blocks") or facts.get("cpu_blocks")
    if blocks:
        return (
            f"this vLLM{version} log gives {blocks:,} KV blocks but not their size in tokens; pass "
            "--block-size (16 on GPUs unless the server was started with another)"
        )
    f = facts.get("failure") or {}
    if f and f["kind"] != "max_seq_len_exceeds_kv":
        return f"this vLLM{version} start-up failed before allocating its pool ({f['kind']}): " + str(
            f["line"]
        )
    if f and "kv_tokens" in f:
        return (
            f"this vLLM{version} start-up failed before allocating: the model's max seq len "
            f"({f['max_seq_len']:,}) is larger than the {f['kv_tokens']:,} tokens its KV cache could hold"
        )
    if f:
        fits = f" (about {f['estimated_max_len']:,} would fit)" if "estimated_max_len" in f else ""
        return (
            f"this vLLM{version} start-up failed before allocating: one request of the model's max seq len "
            f"({f['max_seq_len']:,}) needs {f['needed_gib']} GiB of KV cache, {f['available_gib']} GiB was "
            f"left{fits}"
        )
    return (
        f"this vLLM{version} log has no KV pool line the harness knows ('GPU KV cache size: N tokens' or "
        "'# GPU blocks: N'); pass the server's whole start-up log"
    )
