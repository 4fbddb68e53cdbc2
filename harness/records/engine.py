"""The engines lab's records (the same model on every engine): what each engine allocated, which
API features it delivers, its single-user speed, memory snapshots and the model files fetched.

Built here, one frozen dataclass per kind, as the sweep's records are in ``harness.records.base``
(which holds what every record shares: the schema version, the lab ids, the stamp formats) and
``harness.records.level``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from harness.records.base import FEATURES_LAB, SCHEMA_VERSION, own_fields

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass(frozen=True)
class Allocation:
    """What an engine's log says it allocated, against the prediction for the same settings."""

    KIND: ClassVar[str] = "allocation"  # the record's kind: its schema's name

    label: str
    engine: str
    model: str
    log: str
    settings: dict
    observed: dict
    predicted: dict
    verdict: str
    problems: list[str]
    recorded_at: str

    def to_dict(self) -> dict:
        return {"harness_schema": SCHEMA_VERSION, "record": self.KIND, **own_fields(self)}


@dataclass(frozen=True)
class Features:
    """The engines lab's feature probe of one engine: /v1/models, tools, streamed tools, schema."""

    KIND: ClassVar[str] = "features"  # the record's kind: its schema's name

    engine: str
    engine_version: str
    host: str
    model: str
    base_url: str
    models_endpoint: dict
    tool_calling: dict
    streaming_tool_calling: dict
    structured_output: dict
    measured_on: str

    def to_dict(self) -> dict:
        return {
            "lab": FEATURES_LAB,
            "harness_schema": SCHEMA_VERSION,
            "probe": "features",
            **own_fields(self),
        }


@dataclass(frozen=True)
class EngineSpeed:
    """One single-user speed test (``short`` or ``long``) of the engines lab: medians over the
    repetitions; ``extra`` holds what is known only once both tests ran (prefill, memory)."""

    KIND: ClassVar[str] = "engine-speed"  # the record's kind: its schema's name

    engine: str
    engine_version: str
    backend: str
    host: str
    model: str
    quant: str
    context_length: int | None
    test: str
    repetitions: int
    max_tokens: int
    ttft_s: float | None
    decode_tokens_per_s: float | None
    prompt_tokens: float | None
    completion_tokens: float | None
    token_source: str
    finish_reason: str | None
    text_fields: list[str]
    max_cached_prompt_tokens: int | None
    prompt_tag: bool
    server_prefill_tokens_per_s: float | None
    server_decode_tokens_per_s: float | None
    measured_on: str
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "lab": FEATURES_LAB,
            "harness_schema": SCHEMA_VERSION,
            **own_fields(self, skip=("extra",)),
            **self.extra,
        }


@dataclass(frozen=True)
class MemorySnapshot:
    """Memory as the machine reported it at one moment; ``readings`` holds the GPU, ROCm
    and macOS figures of whichever sources were present, in the order they were read."""

    KIND: ClassVar[str] = "memory-snapshot"  # the record's kind: its schema's name

    taken_at: str
    system: str
    hostname: str
    mem_total_mb: float
    mem_available_mb: float
    swap_free_mb: float
    readings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {**own_fields(self, skip=("readings",)), **self.readings}


@dataclass(frozen=True)
class ModelFetch:
    """One model format fetched (or found already there) and verified; ``result`` holds the path,
    files, bytes, checksums and checks; ``repo`` and ``revision`` are None for Lemonade's copies."""

    KIND: ClassVar[str] = "model-fetch"  # the record's kind: its schema's name

    format: str
    title: str
    source: str
    listed: Any
    result: dict
    fetched_at: str
    repo: str | None = None
    revision: str | None = None

    def to_dict(self) -> dict:
        out = {
            "harness_schema": SCHEMA_VERSION,
            "record": self.KIND,
            "format": self.format,
            "title": self.title,
            "source": self.source,
            "listed": self.listed,
            **self.result,
            "fetched_at": self.fetched_at,
        }
        if self.repo is not None:
            out.update(repo=self.repo, revision=self.revision)
        return out
