"""Options several commands take with one meaning: the model the server reports, the API key,
the notebook. Each command's own default is in the declaration (``defaults``)."""

from __future__ import annotations

from types import MappingProxyType

from harness.options import Option

LOAD_COMMANDS = frozenset({"sweep", "capacity", "probe"})

MODEL = Option(
    "model",
    help="model name the server reports at /v1/models (Locust: empty to omit it)",
    required=LOAD_COMMANDS,
    defaults=MappingProxyType({"locust": ""}),
    web_form=True,
)
API_KEY_ENV = Option(
    "api-key-env",
    default="LOADTEST_API_KEY",
    help="environment variable holding the API key (practice: the key it requires)",
    defaults=MappingProxyType({"probe": None, "measure": None, "practice": None}),
)
LABBOOK = Option(
    "labbook",
    default="labbook.md",
    help="the notebook records are read from and appended to (one JSON line each; prose lines kept)",
    defaults=MappingProxyType({"locust": "", "verify-allocation": None, "models": None}),
)
API_KEY = Option(
    "api-key",
    default="",
    help="bearer token (prefer --api-key-env: the command line is public; never recorded)",
)
MACHINE_DESC = Option("host", default="", help="short description of the machine, for the record")
VERSION = Option("version", bool, False, "print the program's version and end")
PRINT_ONLY = Option("print-only", bool, False, "print the verdicts and figures, record nothing")
MACHINE = Option(
    "machine",
    help="machine-table key (spark, strix, m4-max, ...): its bandwidth for the speed limit and ceilings",
)
MODEL_GB = Option(
    "model-gb",
    float,
    help="model size in GB, for the speed limit (check: Day 3's model when not given)",
    low=1e-3,
    high=1e6,
)
MODEL_FILES = Option(
    "model",
    default="qwen3-8b",
    help="the model: a .gguf file, a Hugging Face directory or a model-table name (qwen3-8b)",
)
CHECKPOINT = Option(
    "checkpoint",
    help="the GGUF file or model folder the server loaded (measure: its chat template's SHA-256 is "
    "recorded; crosscheck: the tool's --model, whose tokeniser it loads)",
    defaults=MappingProxyType({"measure": ""}),
)
DRY_RUN = Option("dry-run", bool, False, "print what it would run or fetch, in order, and do nothing")
AS_JSON = Option("json", bool, False, "print the findings as JSON")
LAB_CHECK = Option("check", bool, False, "apply the lab's validation rules (exit 1 on any FAIL)")
LIBRARY = Option(
    "library",
    default="~/models",
    env_default="HARNESS_MODEL_LIBRARY",
    help="the model library, laid out <owner>/<repo> as the course pages do (default: "
    "HARNESS_MODEL_LIBRARY, else ~/models)",
    defaults=MappingProxyType({"shim-allow": None}),
)
WEIGHT_FORMAT = Option(
    "format", help="weight format from the model table (default: the file's own, or GGUF Q4_K_M)"
)
FORMATS = Option(
    "format",
    many=True,
    metavar="KEY",
    help="only this format (repeatable): gguf, awq, bf16, mlx, exl3, lemonade",
)
