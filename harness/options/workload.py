"""What each request carries beyond the prompt set (docs/workloads.md): drawn lengths,
conversations, the agent loop, ShareGPT files, bursts and trace replay. The length texts are read
by ``harness.workloads.specs.lengths_from`` (as Locust parses them; the sweep reads them into its plan)."""

from __future__ import annotations

from types import MappingProxyType

from harness import bounds
from harness.options import Option, OptionSet

LENGTHS = "harness.workloads.specs:lengths_from"
LOCUST_EMPTY = MappingProxyType({"locust": ""})  # the web form's text field: empty for none

WORKLOAD = Option(
    "workload",
    default="prompts",
    choices=("prompts", "conversations", "agent"),
    help="prompts: one request each (the prompt set, or --input-tokens); conversations: each user "
    "holds a conversation of --turns turns, sending the whole history every turn; agent: the same "
    "over the labs' preamble and tools, each tool call answered by a tool result",
    web_form=True,
)
SHAREGPT = Option(
    "sharegpt",
    help="a ShareGPT file: with --workload conversations, each conversation sends its user messages; "
    "with prompts, each request is a conversation's first user message",
)
INPUT_TOKENS = Option(
    "input-tokens",
    help="prompt lengths drawn from fixed:N, uniform:LO-HI, normal:MEAN,SD or file:PATH "
    "(synthesised prompts instead of the prompt set)",
    reader=LENGTHS,
    web_form=True,
    defaults=LOCUST_EMPTY,
)
OUTPUT_TOKENS = Option(
    "output-tokens",
    help="output lengths drawn the same way, each forced (max_tokens, min_tokens, ignore_eos)",
    reader=LENGTHS,
    web_form=True,
    defaults=LOCUST_EMPTY,
)
TURNS = Option(
    "turns",
    default="uniform:3-5",
    help="conversations: turns per conversation",
    reader=LENGTHS,
    web_form=True,
)
MESSAGE_TOKENS = Option(
    "message-tokens",
    default="uniform:40-80",
    help="conversations: tokens of each new user message",
    reader=LENGTHS,
    web_form=True,
)
THINK_TIME = Option(
    "think-time",
    float,
    0.0,
    "conversations: seconds a user waits between turns",
    low=0,
    high=bounds.MAX_SECONDS,
    web_form=True,
)
BURSTINESS = Option(
    "burstiness",
    float,
    help="with --rate: gamma inter-arrival gaps of shape K (1 is Poisson, below 1 burstier; "
    "vllm bench serve's and AIPerf's meaning)",
    low=1e-3,
    high=1000,
)
TRACE = Option(
    "trace",
    help="replay this trace once, each request at its timestamp (Mooncake JSONL or plain "
    "'SECONDS INPUT OUTPUT' lines; docs/workloads.md), instead of levels",
)
TRACE_TIME_SCALE = Option(
    "trace-time-scale", float, 1.0, "multiply the trace's times (0.5: twice as fast)", low=1e-3, high=1000
)
TRACE_BLOCK_TOKENS = Option(
    "trace-block-tokens",
    int,
    512,
    "prompt tokens each of the trace's hash ids stands for (Mooncake: 512)",
    low=1,
    high=100_000,
)

# the level-shaping ones: harness capacity chooses its own levels
LEVELS = ("burstiness", "trace", "trace-time-scale", "trace-block-tokens")

WORKLOADS = OptionSet(
    "workload",
    (
        BURSTINESS,
        TRACE,
        TRACE_TIME_SCALE,
        TRACE_BLOCK_TOKENS,
        WORKLOAD,
        SHAREGPT,
        INPUT_TOKENS,
        OUTPUT_TOKENS,
        TURNS,
        MESSAGE_TOKENS,
        THINK_TIME,
    ),
)
LOCUST = OptionSet("workload", (WORKLOAD, INPUT_TOKENS, OUTPUT_TOKENS, TURNS, MESSAGE_TOKENS, THINK_TIME))
