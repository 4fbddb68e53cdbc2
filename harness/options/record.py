"""What a level record says about the run beyond its figures: its label, the engine and machine,
and where the notebook and the samples go."""

from __future__ import annotations

from types import MappingProxyType

from harness import bounds
from harness.records.base import UNKNOWN
from harness.options import Option, OptionSet
from harness.options.machine import ENGINE_LOG, RECORD_HOST_NAME
from harness.options.shared import LABBOOK

LABEL = Option(
    "label",
    default="run",
    help="label of the records this run writes",
    defaults=MappingProxyType({"capacity": "capacity", "locust": "locust"}),
)
APPEND = Option(
    "append",
    bool,
    False,
    "add this run's levels to a label that already has levels in the notebook, without the "
    "warning (summarise then shows the levels of both runs)",
)
ENGINE = Option(
    "engine",
    default=UNKNOWN,
    help="engine name for the record",
    required=frozenset({"probe"}),
    defaults=MappingProxyType({"measure": None}),
)
NO_VERSION = MappingProxyType({"measure": "", "probe": ""})
ENGINE_VERSION = Option(
    "engine-version", default=UNKNOWN, help="engine version for the record", defaults=NO_VERSION
)
HOST_DESC = Option("host-desc", default=UNKNOWN, help="machine description for the record")
QUANT = Option(
    "quant",
    default=UNKNOWN,
    help="the model's quantisation, for the record",
    defaults=MappingProxyType({"measure": ""}),
)
CONTEXT_LENGTH = Option(
    "context-length",
    int,
    0,
    "context per sequence the server was started with",
    low=0,
    high=100_000_000,
)
SERVER_SLOTS = Option(
    "server-slots", int, 0, "sequences the server runs at once", low=0, high=bounds.MAX_CONCURRENCY
)
SAMPLES = Option("samples", help="file for per-request samples (default: beside the notebook)")

RECORD = OptionSet(
    "record",
    (LABEL, APPEND, ENGINE, ENGINE_VERSION, HOST_DESC, QUANT, CONTEXT_LENGTH, SERVER_SLOTS, LABBOOK, SAMPLES)
    + (ENGINE_LOG, RECORD_HOST_NAME),
)
LOCUST = OptionSet("record", (LABBOOK, LABEL))
