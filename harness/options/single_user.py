"""``harness measure`` (single-user prefill, decode and memory) and ``harness probe`` (which API
features a server delivers): what they send, how often, and where the server's memory is read."""

from __future__ import annotations

from harness import bounds
from harness.options import Option, OptionSet

SNAPSHOT_ONLY = Option(
    "snapshot-only",
    metavar="FILE",
    help="write an idle memory snapshot to FILE and exit (with no model server running)",
)
BACKEND = Option("backend", default="", help="CUDA, Metal, Vulkan, ROCm, CPU, ...")
SERVER_PID = Option(
    "server-pid", int, 0, "server process id, for its resident set (0: none)", low=0, high=2**31 - 1
)
CONTAINER = Option(
    "container",
    default="",
    help="the engine's container: its resident set from docker stats/top, not the docker client's",
)
IDLE_SNAPSHOT = Option("idle-snapshot", default="", help="the file --snapshot-only wrote")
LONG_REPEATS = Option("long-repeats", int, 16, "paragraph repeats in the long prompt", low=1, high=10_000)
REPETITIONS = Option("repetitions", int, 3, "times each test runs", low=1, high=bounds.MAX_REPETITIONS)
WAIT_SECONDS = Option(
    "wait-seconds",
    int,
    120,
    "seconds to wait for the server to answer /v1/models",
    low=0,
    high=int(bounds.MAX_SECONDS),
)
NO_WARMUP = Option("no-warmup", bool, False, "skip the warm-up request")
REUSE_PROMPT = Option(
    "reuse-prompt",
    bool,
    False,
    "drop the run tag so repeats hit the prefix cache: a demonstration, nothing is recorded",
)
PROMPT_SUFFIX = Option("prompt-suffix", default=" /no_think", help="appended to the probe prompts")

MEASURE = OptionSet(
    "single-user",
    (SNAPSHOT_ONLY, BACKEND, SERVER_PID, CONTAINER, IDLE_SNAPSHOT, LONG_REPEATS, REPETITIONS, WAIT_SECONDS),
)
