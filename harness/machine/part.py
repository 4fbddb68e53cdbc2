"""The machine part of a record, built from what the machine's tools printed.

``build`` takes each tool's output (or why there is none) and returns the JSON object every
record carries under ``machine``: CPU, memory, OS and kernel, each accelerator, the container
image, and an ``absent`` map that gives, for each null, the reason. The probe
(``harness.machine.probe``) runs the tools; this module only reads their text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping, Union

from harness.machine import readers
from harness.schema_facts import FieldNames, KeyNames, fact, line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MACHINE_SCHEMA = 1  # the part's own version (schemas/machine.schema.json)
CLOSED: dict = {"additionalProperties": False}  # a part holds its declared fields and nothing else


@dataclass(kw_only=True)
class Cpu:
    model: str | None = fact(required=True, nullable=True)
    cores: int | None = fact(
        "physical cores (lscpu, sysctl hw.physicalcpu)", required=True, nullable=True, minimum=0
    )
    logical_cpus: int | None = fact(required=True, nullable=True, minimum=0)
    arch: str | None = fact(required=True, nullable=True)

    SCHEMA_FACTS: ClassVar[dict] = CLOSED


@dataclass(kw_only=True)
class OsPart:
    system: str | None = fact(required=True, nullable=True)
    name: str | None = fact(required=True, nullable=True)
    kernel: str | None = fact(required=True, nullable=True)

    SCHEMA_FACTS: ClassVar[dict] = CLOSED


OS = FieldNames(OsPart)  # the os part's keys
# What the interpreter knows of this machine, beside the tools' outputs (``harness.machine.probe``).
FACTS = KeyNames(
    "system",
    "arch",
    "kernel",
    "logical_cpus",
    "endpoint_here",
    "endpoint_why",
    "port",
    "dockerenv",
    "host_name",
)


@dataclass(kw_only=True)
class Accelerator:
    vendor: str = fact(
        "who made it, or 'engine log' for a device only the engine's log named",
        required=True,
        enum=["nvidia", "amd", "apple", "engine log"],
    )
    name: str | None = fact(required=True, nullable=True)
    memory_bytes: int | None = fact(
        "its own memory; null on unified-memory chips (see the machine's memory_bytes)",
        required=True,
        nullable=True,
        minimum=0,
    )
    driver: str | None = fact(
        "the kernel driver's version as its tool prints it", required=True, nullable=True
    )
    runtime: str | None = fact(
        "the runtime: 'CUDA 13.0', 'ROCm 6.4.1'; for an engine-log device its device name (Vulkan0)",
        required=True,
        nullable=True,
    )
    source: str = fact(required=True, enum=["nvidia-smi", "rocm-smi", "amd-smi", "sysctl", "engine log"])

    SCHEMA_DEF: ClassVar[str] = "accelerator"  # its name in the schema's $defs
    SCHEMA_FACTS: ClassVar[dict] = CLOSED


@dataclass(kw_only=True)
class Container:
    image: str | None = fact(required=True, nullable=True)
    ran: str = fact(
        "what ran in it: the engine serving the endpoint's port, or the harness itself",
        required=True,
        enum=["the engine", "the harness"],
    )
    source: str = fact(required=True, enum=["docker ps", "/run/.containerenv", "/.dockerenv"])

    SCHEMA_FACTS: ClassVar[dict] = CLOSED


@dataclass(kw_only=True)
class Machine:
    """The machine part every record carries under ``machine``; ``build`` writes it through this
    declaration, and scripts/schemas.py writes schemas/machine.schema.json from it."""

    machine_schema: int = fact(required=True, schema={"const": MACHINE_SCHEMA}, default=MACHINE_SCHEMA)
    cpu: Cpu = fact(required=True)
    memory_bytes: int | None = fact(
        "the machine's memory (MemTotal, hw.memsize)", required=True, nullable=True, minimum=0
    )
    os: OsPart = fact(required=True)
    accelerators: list[Accelerator] = fact(required=True)
    container: Container | None = fact(required=True, nullable=True)
    endpoint_here: bool | None = fact(
        "whether the record's endpoint is served on this machine (a loopback name or an address of it)",
        required=True,
        nullable=True,
    )
    host_name: str | None = fact("only when asked for with --record-host-name", default=None)
    absent: dict = fact(
        "for each null or empty field, why",
        required=True,
        schema={"additionalProperties": {"type": "string", "minLength": 1}},
    )

    KIND: ClassVar[str] = "machine"  # the part's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "The machine a record was written on, read from the machine (harness.machine)",
        "description": "Every record the harness writes carries this part under 'machine' (records written "
        "before it do not). It describes the host the harness ran on; endpoint_here says whether the "
        "measured endpoint was served on it too. Each null has its reason in 'absent', keyed by the "
        "field's path (cpu.model, accelerators.0.runtime). No serial number, UUID or bus id is read; "
        "the host name only when asked for (--record-host-name).",
        **CLOSED,
    }


@dataclass(frozen=True)
class Missing:
    """A tool or file that gave nothing, and why (not installed, timed out, failed, no such file)."""

    why: str


Output = Union[str, Missing]  # noqa: UP007 (a runtime alias)


def _text(outputs: Mapping[str, Output], key: str) -> str | None:
    value = outputs.get(key)
    return value if isinstance(value, str) else None


def _why(outputs: Mapping[str, Output], key: str, default: str) -> str:
    value = outputs.get(key)
    return value.why if isinstance(value, Missing) else default


def build(outputs: Mapping[str, Output], facts: Mapping[str, object]) -> dict:
    """The machine part from the tools' ``outputs`` (keys as ``harness.machine.probe.TOOLS``) and
    the plain ``facts`` the interpreter knows (system, arch, kernel, logical CPUs, the endpoint's
    host being this one, the host name when asked for)."""
    absent: dict[str, str] = {}
    system = str(facts.get(FACTS.system) or "")
    cpu, memory = _cpu(outputs, facts, absent, system)
    os_part = _os(outputs, facts, absent, system)
    accelerators = _accelerators(outputs, absent, system, memory)
    container = _container(outputs, facts, absent)
    here = facts.get(FACTS.endpoint_here)
    if here is None:
        absent["endpoint_here"] = str(facts.get(FACTS.endpoint_why) or "the record names no endpoint")
    elif here is False:
        absent["server"] = (
            "the endpoint is on another host: this part describes the load generator's machine only"
        )
    part = Machine(
        cpu=Cpu(**cpu),
        memory_bytes=memory,
        os=OsPart(**os_part),
        accelerators=[Accelerator(**a) for a in accelerators],
        container=Container(**container) if container else None,
        endpoint_here=here,
        host_name=str(facts[FACTS.host_name]) if facts.get(FACTS.host_name) else None,
        absent=absent,
    )
    return line(part)


def _cpu(outputs, facts, absent: dict, system: str) -> tuple[dict, int | None]:
    found: dict = {}
    memory = None
    if system == "Darwin":
        mac = readers.mac_machine(readers.sysctl(_text(outputs, "sysctl") or ""))
        found, memory = mac, mac.get("memory_bytes")
        where = _why(outputs, "sysctl", "sysctl printed no such value")
    else:
        found = readers.lscpu(_text(outputs, "lscpu") or "")
        if "model" not in found and (model := readers.cpuinfo_model(_text(outputs, "cpuinfo") or "")):
            found["model"] = model
        memory = readers.meminfo_bytes(_text(outputs, "meminfo") or "")
        where = _why(outputs, "lscpu", "lscpu printed no such line")
        if memory is None:
            absent["memory_bytes"] = _why(outputs, "meminfo", "/proc/meminfo has no MemTotal line")
    if system == "Darwin" and memory is None:
        absent["memory_bytes"] = where
    cpu = {
        "model": found.get("model"),
        "cores": found.get("cores"),
        "logical_cpus": found.get("logical_cpus") or facts.get(FACTS.logical_cpus),
        "arch": facts.get(FACTS.arch) or None,
    }
    for key, value in cpu.items():
        if value is None:
            absent[f"cpu.{key}"] = (
                where if key != "arch" else "the interpreter does not know the architecture"
            )
    return cpu, memory


def _os(outputs, facts, absent: dict, system: str) -> dict:
    if system == "Darwin":
        vers = readers.sysctl(_text(outputs, "sw_vers") or "")
        name = " ".join(v for v in (vers.get("ProductName"), vers.get("ProductVersion")) if v) or None
        name_why = _why(outputs, "sw_vers", "sw_vers printed no ProductName")
        kernel = readers.mac_machine(readers.sysctl(_text(outputs, "sysctl") or "")).get("kernel")
    else:
        name = readers.os_release(_text(outputs, "os-release") or "")
        name_why = _why(outputs, "os-release", "/etc/os-release names no system")
        kernel = None
    out = {OS.system: system or None, OS.name: name, OS.kernel: kernel or facts.get(FACTS.kernel) or None}
    if out[OS.system] is None:
        absent["os.system"] = "the interpreter does not know the system"
    if name is None:
        absent["os.name"] = name_why
    if out[OS.kernel] is None:
        absent["os.kernel"] = "the interpreter does not know the kernel release"
    return out


def _accelerators(outputs, absent: dict, system: str, memory: int | None) -> list[dict]:
    found: list[dict] = []
    looked: list[str] = []
    nvidia = _nvidia(outputs)
    found += nvidia
    if not nvidia:
        looked.append(_why(outputs, "nvidia-smi", "nvidia-smi listed no GPU"))
    amd = _amd(outputs)
    found += amd
    if not amd:
        looked.append(_why(outputs, "rocm-smi", "rocm-smi listed no card"))
        looked.append(_why(outputs, "amd-smi", "amd-smi listed no GPU"))
    if system == "Darwin":
        chip = readers.mac_machine(readers.sysctl(_text(outputs, "sysctl") or "")).get("model")
        if chip and chip.startswith("Apple"):  # Apple silicon: the GPU is on the chip, its memory shared
            found.append(_accelerator("apple", chip, memory, None, None, "sysctl"))
    engine = readers.engine_log_devices(_text(outputs, "engine-log") or "")
    if isinstance(outputs.get("engine-log"), Missing):
        absent["engine_log"] = _why(outputs, "engine-log", "")
    for device in engine:
        if not any(device["name"] and a["name"] and device["name"] in a["name"] for a in found):
            found.append(
                _accelerator("engine log", device["name"], None, None, device["device"], "engine log")
            )
    for i, acc in enumerate(found):
        for key in ("name", "memory_bytes", "driver", "runtime"):
            if acc[key] is None:
                absent[f"accelerators.{i}.{key}"] = _ACC_WHY[acc["source"]][key]
    if not found:
        absent["accelerators"] = "none found: " + "; ".join(dict.fromkeys(looked))
    return found


_ACC_WHY = {
    "nvidia-smi": {
        "name": "nvidia-smi printed [N/A] for the name",
        "memory_bytes": "nvidia-smi printed [N/A] for memory.total (unified memory: see memory_bytes)",
        "driver": "nvidia-smi printed no driver version",
        "runtime": "nvidia-smi's table printed no CUDA Version",
    },
    "rocm-smi": {
        "name": "rocm-smi printed a PCI id, not a name",
        "memory_bytes": "rocm-smi printed no VRAM Total Memory",
        "driver": "rocm-smi printed no Driver version",
        "runtime": "/opt/rocm/.info/version is absent",
    },
    "amd-smi": {
        "name": "amd-smi printed no MARKET_NAME",
        "memory_bytes": "amd-smi printed no VRAM SIZE",
        "driver": "amd-smi printed no DRIVER VERSION",
        "runtime": "/opt/rocm/.info/version is absent",
    },
    "sysctl": {
        "name": "sysctl printed no brand string",
        "memory_bytes": "sysctl printed no hw.memsize",
        "driver": "macOS names no GPU driver version apart from the OS",
        "runtime": "Metal's version is the OS's: see os.name",
    },
    "engine log": {
        "name": "the engine's log named the device without a name",
        "memory_bytes": "the engine's log gives free memory only, not the total",
        "driver": "the engine's log names no driver version",
        "runtime": "the engine's log names no runtime version",
    },
}


def _accelerator(vendor, name, memory, driver, runtime, source) -> dict:
    return {
        "vendor": vendor,
        "name": name,
        "memory_bytes": memory,
        "driver": driver,
        "runtime": runtime,
        "source": source,
    }


def _nvidia(outputs) -> list[dict]:
    query = readers.nvidia_query(_text(outputs, "nvidia-smi") or "")
    table = readers.nvidia_table(_text(outputs, "nvidia-smi-table") or "")
    rows = query or table["gpus"]
    cuda = table.get("cuda")
    return [
        _accelerator(
            "nvidia",
            g.get("name"),
            g.get("memory_bytes"),
            g.get("driver") or table.get("driver"),
            f"CUDA {cuda}" if cuda else None,
            "nvidia-smi",
        )
        for g in rows
    ]


def _amd(outputs) -> list[dict]:
    runtime = _text(outputs, "rocm-version")
    runtime = f"ROCm {runtime.strip()}" if runtime and runtime.strip() else None
    text = _text(outputs, "rocm-smi")
    if text:
        try:
            got = readers.rocm_json(text)
        except ValueError:
            got = {"gpus": []}
        if got["gpus"]:
            return [
                _accelerator("amd", g["name"], g["memory_bytes"], got.get("driver"), runtime, "rocm-smi")
                for g in got["gpus"]
            ]
    return [
        _accelerator("amd", g["name"], g["memory_bytes"], g["driver"], runtime, "amd-smi")
        for g in readers.amd_smi_static(_text(outputs, "amd-smi") or "")
    ]


def _container(outputs, facts, absent: dict) -> dict | None:
    engine = readers.docker_ps_image(_text(outputs, "docker-ps") or "", int(facts.get(FACTS.port) or 0))
    if engine:
        return {"image": engine, "ran": "the engine", "source": "docker ps"}
    own = readers.containerenv_image(_text(outputs, "containerenv") or "")
    if own:
        return {"image": own, "ran": "the harness", "source": "/run/.containerenv"}
    if facts.get(FACTS.dockerenv):
        absent["container.image"] = (
            "the harness runs in a Docker container (/.dockerenv), whose image is not visible from inside"
        )
        return {"image": None, "ran": "the harness", "source": "/.dockerenv"}
    absent["container"] = _why(outputs, "docker-ps", "no container publishes the endpoint's port") + (
        "; the harness itself runs in no container it can see"
    )
    return None


def accelerator_names(part: Mapping) -> list[str | None]:
    """Each accelerator's name in a record's machine part, in its order (None where it has none)."""
    found = part.get("accelerators") or []
    return [a.get("name") if isinstance(a, Mapping) else None for a in found]
