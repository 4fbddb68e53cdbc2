"""The endpoint and the load: what ``harness sweep``, ``harness capacity`` and Locust's users send,
how many, and the two bounds of every request (``harness.bounds``)."""

from __future__ import annotations

from types import MappingProxyType

from harness import bounds
from harness.workloads.prompts import PROMPT_SETS
from harness.endpoints import DEFAULT as DEFAULT_ENDPOINT, ENDPOINT_HELP, KINDS
from harness.options import Option, OptionSet
from harness.options.shared import API_KEY_ENV, MODEL
from harness.options.workers import MAX_PROCESSES

CLI = frozenset({"sweep", "capacity"})

SINGLE_USER = MappingProxyType({"measure": "http://127.0.0.1:8080/v1", "probe": "http://127.0.0.1:8080/v1"})
BASE_URL = Option(
    "base-url",
    default="http://127.0.0.1:8000/v1",
    help="the server, with or without /v1 (http://HOST:PORT means http://HOST:PORT/v1)",
    defaults=SINGLE_USER,
)
CONCURRENCY = Option(
    "concurrency",
    default="1,5,10,20",
    each=int,
    low=1,
    high=bounds.MAX_CONCURRENCY,
    help="comma-separated levels, run in order",
)
RATE = Option(
    "rate",
    each=float,
    low=1e-3,
    high=bounds.MAX_RATE_RPS,
    help="open loop: comma-separated arrival rates (requests/s), one level each, instead of --concurrency",
)
POISSON = Option(
    "poisson",
    bool,
    False,
    "with --rate (capacity: --rate-step): Poisson arrivals instead of evenly spaced",
)
DURATION = Option(
    "duration",
    float,
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
    help="closed loop for this many seconds per level (then drain) instead of a request count",
)
REQUESTS = Option(
    "requests",
    int,
    40,
    "requests per level (at least; the p95 needs about 20)",
    low=1,
    high=bounds.MAX_REQUESTS,
    defaults=MappingProxyType({"capacity": 8, "demo": 24}),
)
MIN_ROUNDS = Option(
    "min-rounds",
    int,
    0,
    "at least this many requests per worker per level",
    low=0,
    high=bounds.MAX_REQUESTS,
    defaults=MappingProxyType({"capacity": 3}),
)
MAX_TOKENS = Option(
    "max-tokens",
    int,
    128,
    "output tokens each request asks for (at least 2: TPOT needs two)",
    low=2,
    high=bounds.MAX_TOKENS,
    web_form=True,
    defaults=MappingProxyType({"probe": 1024, "demo": 32, "crosscheck": None}),
)
TEMPERATURE = Option("temperature", float, 0.0, "sampling temperature", low=0, high=10, web_form=True)
# the endpoint kinds are plug-ins (harness/endpoints): a new one is offered here with no edit
ENDPOINT = Option("endpoint", str, DEFAULT_ENDPOINT, ENDPOINT_HELP, choices=tuple(KINDS), web_form=True)
TIMEOUT = Option(
    "timeout",
    float,
    300.0,
    "seconds one request may take in all (headers and stream)",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
    aliases=("--request-timeout",),
    web_form=True,
    defaults=MappingProxyType({"measure": 600.0}),
)
IDLE_TIMEOUT = Option(
    "idle-timeout",
    float,
    None,
    "seconds a request may go without a byte from the server (absent or 0: --timeout)",
    low=0,
    high=bounds.MAX_SECONDS,
    web_form=True,
    defaults=MappingProxyType({"locust": 0.0}),  # the web form's field needs a number
)
TIMEOUT_PER_USER = Option(
    "timeout-per-user",
    float,
    0.0,
    "closed loop: each request's total bound at c users is the larger of --timeout and "
    "c x this many seconds (a request may wait for a seat behind the others; 0: --timeout only)",
    low=0,
    high=bounds.MAX_SECONDS,
)
PROMPT_SET = Option(
    "prompt-set", str, "mixed", "the built-in prompts sent", choices=PROMPT_SETS, web_form=True
)
PROMPT_FILE = Option(
    "prompt-file", help="JSONL prompts ({'prompt': ...} or {'messages': [...]}) instead of a set"
)
WARMUP = Option("warmup", int, 1, "discarded short requests before the first level", low=0, high=1000)
SEED = Option("seed", int, 1, "seed for arrivals and drawn lengths", low=0, high=2**32 - 1)
NO_ENDPOINT_CHECK = Option(
    "no-endpoint-check",
    bool,
    False,
    "skip the proof before the first level (model listed, one request with text, finish reason and "
    "usage, the server's context fits the prompts)",
)
METRICS_URL = Option(
    "metrics-url",
    help="engine /metrics URL to sample during each level (default: derived from --base-url; 'none' to skip)",
)
REPEAT = Option(
    "repeat",
    int,
    1,
    "run each level this many times in a row (each run its own record, marked repeat i of R); "
    "summarise and the report then show each figure with the range of the R runs",
    low=1,
    high=100,
)
# Locust's side: its --host is the server's root, this the path before /chat/completions
API_BASE_PATH = Option("api-base-path", str, "/v1", "path before /chat/completions", web_form=True)
PROOF_WAIT = Option(
    "proof-wait",
    float,
    0.0,
    "headless: seconds to wait for an endpoint that refuses connections before the proof fails",
    low=0,
    high=bounds.MAX_SECONDS,
)

# the levels: harness capacity chooses its own, so it takes the set without them
LEVELS = ("concurrency", "rate", "duration", "repeat")

LOAD = OptionSet(
    "load",
    (
        BASE_URL,
        MODEL,
        CONCURRENCY,
        REQUESTS,
        MIN_ROUNDS,
        MAX_TOKENS,
        TEMPERATURE,
        ENDPOINT,
        TIMEOUT,
        IDLE_TIMEOUT,
        TIMEOUT_PER_USER,
        PROMPT_SET,
        PROMPT_FILE,
        WARMUP,
        API_KEY_ENV,
        RATE,
        POISSON,
        DURATION,
        SEED,
        NO_ENDPOINT_CHECK,
        METRICS_URL,
        REPEAT,
    ),
)
LOCUST = OptionSet(
    "load",
    (
        MODEL,
        MAX_TOKENS,
        TEMPERATURE,
        PROMPT_SET,
        API_BASE_PATH,
        ENDPOINT,
        API_KEY_ENV,
        PROOF_WAIT,
        TIMEOUT,
        IDLE_TIMEOUT,
    ),
)
# Locust's own options, given the ranges the harness holds them to (-1 processes: one per core)
USERS = Option("users", int, low=0, high=bounds.MAX_CONCURRENCY)
LOCUST_PROCESSES = Option("processes", int, low=-1, high=MAX_PROCESSES)
LOCUST_OWN = OptionSet("locust", (USERS, LOCUST_PROCESSES))
