"""The engines lab's records (the same model on every engine): what each engine allocated, which
API features it delivers, its single-user speed, memory snapshots and the model files fetched.

Built here, one frozen dataclass per kind, as the sweep's records are in ``harness.records.base``
(which holds what every record shares: the schema version, the lab ids, the stamp formats) and
``harness.records.level``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping

from harness.records.base import FEATURES_LAB, HEAD, MACHINE_NOTE, SCHEMA_VERSION
from harness.schema_facts import FieldNames, fact, line, line_keys, read_line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass(frozen=True)
class Allocation:
    """What an engine's log says it allocated, against the prediction for the same settings."""

    label: str = fact()
    engine: str = fact(required=True, enum=["llama-server", "vllm", "trtllm"])
    model: str = fact()
    log: str = fact(required=True)
    settings: dict = fact("slots, ctx_per_slot, cache_type, swa_full, kv_bytes", required=True)
    observed: dict = fact(required=True)
    predicted: dict = fact(
        required=True,
        schema={"required": ["log_lines"]},
        properties={"log_lines": {"type": "array", "items": {"type": "string"}}},
    )
    verdict: str = fact(
        "observed: read and recorded, nothing predicted (e.g. vLLM sized by a memory fraction)",
        required=True,
        enum=["match", "mismatch", "observed"],
    )
    problems: list[str] = fact(required=True)
    recorded_at: str = fact()
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "allocation"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "What an engine allocated, read from its log, against the prediction"
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.harness_schema, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.record: {"const": "allocation"},
    }

    def to_dict(self) -> dict:
        return {HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Allocation:
        """An allocation line as the typed record."""
        return read_line(cls, record)


ALLOCATION = FieldNames(Allocation)  # an allocation line's keys


@dataclass(frozen=True)
class Verdict:
    """One probe's verdict in a features record: supported or not, the status, and when not, the
    exact reason and the server's raw reply. The probes' builders write it as a dict (a probe may
    add keys of its own, such as the model ids listed); this part declares the keys they share."""

    supported: bool = fact(required=True)
    status: int = fact()
    detail: str = fact("the exact reason, when not supported")
    raw_reply: str = fact(
        "when not supported: the server's raw reply (a streamed one's lines), cut after 4,096 characters",
        maxLength=4200,
    )

    SCHEMA_DEF: ClassVar[str] = "verdict"  # its name in the schema's $defs


VERDICT = FieldNames(Verdict)  # a verdict's keys (the probes write them, the report reads them)
_VERDICT = {"$ref": "#/$defs/verdict"}


@dataclass(frozen=True)
class Features:
    """The engines lab's feature probe of one engine: /v1/models, tools, streamed tools, schema."""

    engine: str = fact(required=True, minLength=1)
    engine_version: str = fact()
    host: str = fact()
    model: str = fact(required=True)
    base_url: str = fact()
    models_endpoint: dict = fact(required=True, schema=_VERDICT)
    tool_calling: dict = fact(required=True, schema=_VERDICT)
    streaming_tool_calling: dict = fact("added: tool_calls arriving as stream deltas", schema=_VERDICT)
    structured_output: dict = fact(required=True, schema=_VERDICT)
    measured_on: str = fact()
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "features"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "What one server really supports: model listing, tool calling, JSON-schema output"
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab, "probe")
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.lab: {"type": "string"},
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.probe: {"const": "features"},
    }

    def to_dict(self) -> dict:
        return {
            HEAD.lab: FEATURES_LAB,
            HEAD.harness_schema: SCHEMA_VERSION,
            HEAD.probe: self.KIND,
            **line(self),
        }

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Features:
        """A features line as the typed record."""
        return read_line(cls, record)


FEATURES = FieldNames(Features)  # a features line's keys (the verdicts a table reads)


@dataclass(frozen=True)
class SpeedLimit:
    """A speed record's ``speed_limit`` part: the machine's bandwidth over the model's size, and the
    short test's decode as a share of it (``harness.sizing.arithmetic.speed_limit_part``)."""

    machine: str = fact()
    bandwidth_gb_s: float = fact(required=True, exclusiveMinimum=0)
    model_gb: float = fact(required=True, exclusiveMinimum=0)
    tok_s: float = fact(required=True)
    share: float = fact(required=True, minimum=0)


@dataclass(frozen=True)
class TimingsCheck:
    """The long test's client figures against the server's own timings, as signed shares of the
    server's (``harness.measure.server_timings.compare``)."""

    prefill_gap: float | None = fact(required=True, nullable=True)
    decode_gap: float | None = fact(required=True, nullable=True)
    within: float = fact(required=True, minimum=0)
    agree: bool = fact(required=True)
    finding: str | None = fact(required=True, nullable=True)

    def to_dict(self) -> dict:
        return line(self)

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> TimingsCheck:
        return read_line(cls, value)


@dataclass(frozen=True)
class ChatTemplate:
    """The checkpoint's chat template: the first hex digits of its SHA-256 and where it was read,
    or no digest and a note saying why (``harness.engines.models.chat_template.fingerprint``)."""

    sha256: str | None = fact(required=True, nullable=True, pattern="^[0-9a-f]{12}$")
    source: str | None = fact(default=None)
    note: str | None = fact(default=None)

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class BothTests:
    """What a speed record holds once both tests ran: prefill from their difference, the memory
    the server holds, its version reply and its chat template."""

    prefill_tokens_per_s: float | None = fact("from the short/long difference", nullable=True)
    prefill_note: str | None = fact(
        "why prefill_tokens_per_s is null (no token counts, or the long prompt's TTFT not above the "
        "short one's)",
        default=None,
    )
    memory: dict = fact(default_factory=dict)
    memory_delta_mb: dict = fact(default_factory=dict)
    process_resident_mb: float | None = fact(
        "RSS of the server process and all its descendants, MB", nullable=True, default=None
    )
    process_tree: dict = fact(
        "processes, rss_mb (summed) and pss_mb (shared pages split) of the server's process tree",
        default_factory=dict,
    )
    server_version: str | None = fact(
        "the server's GET /version reply, one line (TensorRT-LLM documents it; the lab records it whole)",
        default=None,
    )
    chat_template: ChatTemplate | None = fact(
        "measure --checkpoint: the first 12 hex digits of the SHA-256 of the chat template the "
        "checkpoint carries (a GGUF's tokenizer.chat_template, a folder's chat_template.jinja or "
        "tokenizer_config.json) and where it was read, or a null sha256 and a note saying why there is "
        "none; the identity row compares it",
        default=None,
    )


@dataclass(frozen=True)
class EngineSpeed:
    """One single-user speed test (``short`` or ``long``) of the engines lab: medians over the
    repetitions; ``both`` holds what is known only once both tests ran (prefill, memory)."""

    engine: str = fact(required=True, minLength=1)
    engine_version: str = fact()
    backend: str = fact()
    host: str = fact()
    model: str = fact(required=True)
    quant: str = fact()
    context_length: int = fact(minimum=0)
    test: str = fact(required=True, enum=["short", "long"])
    repetitions: int = fact(required=True, minimum=1)
    max_tokens: int = fact(minimum=1)
    ttft_s: float = fact(required=True, minimum=0)
    decode_tokens_per_s: float | None = fact(
        "null when no true rate exists (one token, one delta, a zero interval); decode_note says which",
        required=True,
        nullable=True,
        minimum=0,
    )
    prompt_tokens: float | None = fact(nullable=True)
    completion_tokens: float | None = fact(nullable=True)
    token_source: str = fact(required=True, enum=["usage", "chunks"])
    finish_reason: str | None = fact(nullable=True)
    text_fields: list[str] = fact()
    max_cached_prompt_tokens: int | None = fact(
        "above 64 means the prompt tag did not defeat the cache", nullable=True
    )
    prompt_tag: bool = fact()
    server_prefill_tokens_per_s: float | None = fact(nullable=True)
    server_decode_tokens_per_s: float | None = fact(nullable=True)
    measured_on: str = fact()
    decode_note: str | None = fact(default=None)
    energy: dict | None = fact(
        "added: the energy of this test's repetitions (not its warm-up), as a level record's energy "
        "part (schemas/level.schema.json; tests/unit/energy/test_engine_tables.py holds the two the "
        "same): output tokens and requests are the repetitions'; label says imitation or stand-in "
        "where the headline devices are no real device",
        declared_in="harness.energy.record_part.ENERGY_SCHEMA",
        default=None,
    )
    cost: dict | None = fact(
        "added: the cost of a million output tokens over this test's repetitions, as a level "
        "record's cost part",
        declared_in="harness.energy.record_part.COST_SCHEMA",
        default=None,
    )
    both: BothTests | None = fact(flatten="", default=None)
    server_timings_check: TimingsCheck | None = fact(
        "long test only, where the server sent llama.cpp's timings block: the client's prefill (from "
        "the difference) and decode against the server's own, as signed shares of the server's; agree "
        "when both are within `within` (the engines lab's few per cent)",
        default=None,
    )
    speed_limit: SpeedLimit | None = fact(
        "the speed limit: the short test's decode as a share of bandwidth / model size (60-85 % is sane)",
        default=None,
    )
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)  # the writer's

    KIND: ClassVar[str] = "engine-speed"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "Single-user speed for one test (short or long prompt): medians of the measured runs"
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab,)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.lab: {"type": "string"},
    }

    def to_dict(self) -> dict:
        return {HEAD.lab: FEATURES_LAB, HEAD.harness_schema: SCHEMA_VERSION, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> EngineSpeed:
        """A speed line as the typed record; a field the line lacks (one written before it existed)
        reads as its default, or None."""
        return read_line(cls, record)


SPEED = FieldNames(EngineSpeed)  # a speed line's keys (a table's columns, a check's figures)


@dataclass(frozen=True)
class Readings:
    """A memory snapshot's figures from each source present, MB: nvidia-smi (device and per
    process), rocm-smi (VRAM and GTT), macOS vm_stat and sysctl, psutil's swap. A source absent
    leaves its keys out, so the builder (``harness.engines.memory``) keeps them as a dict, keyed
    by ``READINGS``; a device that reports no figure writes null (a GB10's nvidia-smi)."""

    gpu_used_mb: float | None = fact(nullable=True)
    gpu_total_mb: float | None = fact(nullable=True)
    gpu_process_mb: float = fact()
    rocm_vram_used_mb: float = fact()
    rocm_gtt_used_mb: float = fact()
    mac_free_mb: float = fact()
    mac_wired_mb: float = fact()
    mac_compressed_mb: float = fact()
    mac_used_mb: float = fact()
    swap_used_mb: float = fact("psutil's swap in use", minimum=0)
    mac_swap_used_mb: float = fact("sysctl vm.swapusage's used figure (a Mac)", minimum=0)
    unread: list[str] = fact("one line per tool whose answer gave no figure, saying why")


READINGS = FieldNames(Readings)  # a snapshot's figures by source


@dataclass(frozen=True)
class MemorySnapshot:
    """Memory as the machine reported it at one moment; ``readings`` holds the GPU, ROCm
    and macOS figures of whichever sources were present, in the order they were read."""

    taken_at: str = fact(required=True)
    system: str = fact()
    hostname: str = fact()
    mem_total_mb: float = fact(required=True, minimum=0)
    mem_available_mb: float = fact(required=True, minimum=0)
    swap_free_mb: float = fact(minimum=0)
    readings: dict = fact(flatten="", declared_in="harness.records.engine.Readings", default_factory=dict)

    KIND: ClassVar[str] = "memory-snapshot"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "Memory as the machine reports it, in MB (1e6 bytes); nvidia-smi figures are its MiB"
    }

    def to_dict(self) -> dict:
        return line(self)

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> MemorySnapshot:
        """A snapshot as the typed record, its sources' figures (those it has) as ``readings``."""
        known = set(line_keys(Readings))
        return replace(read_line(cls, record), readings={k: v for k, v in record.items() if k in known})


SNAPSHOT = FieldNames(MemorySnapshot)  # a snapshot's own keys (its sources' are READINGS)


@dataclass(frozen=True)
class FetchResult:
    """What a fetch found and checked (``harness.engines.models.fetch``): where the model lies,
    how many files and bytes, the checksum and where it came from, each check that passed."""

    file: str | None = fact(nullable=True)
    path: str = fact("where it lies: a file or folder in the library, or the Lemonade name", required=True)
    files: int | None = fact(required=True, nullable=True, minimum=0)
    bytes: int | None = fact(required=True, nullable=True, minimum=0)
    sha256: str | None = fact(nullable=True, pattern="^[0-9a-f]{64}$")
    sha256_from: str | None = fact(
        "where the expected checksum came from", nullable=True, enum=["hub", "table", None]
    )
    checks: list[str] = fact("each check that passed, in words", required=True)
    downloaded: bool = fact("false when it was already present and verified", required=True)


@dataclass(frozen=True)
class ModelFetch:
    """One model format fetched (or found already there) and verified; ``result`` holds the path,
    files, bytes, checksums and checks; ``repo`` and ``revision`` are None for Lemonade's copies."""

    format: str = fact(required=True)
    title: str = fact()
    source: str = fact(required=True, enum=["hf", "lemonade"])
    listed: str = fact("what the table says the hub listed, for comparison")
    result: FetchResult = fact(flatten="")
    fetched_at: str = fact(required=True)
    repo: str | None = fact(default=None)
    revision: str | None = fact(default=None)
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "model-fetch"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "One model format fetched (or found already present) and checked",
        "additionalProperties": False,
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.harness_schema, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.record: {"const": "model-fetch"},
        HEAD.lab: {"type": "string"},
    }

    def to_dict(self) -> dict:
        return {HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> ModelFetch:
        """A model-fetch line as the typed record."""
        return read_line(cls, record)
