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
    help="environment variable holding the API key",
    defaults=MappingProxyType({"probe": None, "measure": None}),
)
LABBOOK = Option(
    "labbook",
    default="labbook.md",
    help="the notebook (one JSON line per record; prose lines kept)",
    defaults=MappingProxyType({"locust": "", "verify-allocation": None, "models": None}),
)
API_KEY = Option(
    "api-key",
    default="",
    help="bearer token (prefer --api-key-env: the command line is public; never recorded)",
)
MACHINE_DESC = Option("host", default="", help="short description of the machine, for the record")
PRINT_ONLY = Option("print-only", bool, False, "print the verdicts and figures, record nothing")
MACHINE = Option(
    "machine",
    help="machine-table key (spark, strix, m4-max, ...): its bandwidth for the speed limit and ceilings",
)
MODEL_GB = Option("model-gb", float, help="model size in GB, for the speed limit", low=1e-3, high=1e6)
