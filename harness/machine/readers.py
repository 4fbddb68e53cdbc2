"""Pure readers of the tools that describe a machine: text in, facts out.

Each reader takes one tool's output as printed (nvidia-smi, rocm-smi, amd-smi, lscpu, sysctl,
/proc/meminfo, os-release, docker ps, a llama.cpp load log) and returns what it states. A fact the
text does not state is left out, never guessed. Serial numbers, UUIDs and bus ids are never read.
"""

from __future__ import annotations

import json
import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_NA = {"", "[n/a]", "n/a", "not supported", "[not supported]", "unknown"}
_MIB = 2**20


def _cell(text: str) -> str | None:
    """One cell of a tool's table, None where the tool printed N/A or Not Supported."""
    text = text.strip()
    return None if text.lower() in _NA else text


def _mib_bytes(text: str | None) -> int | None:
    """``81559 MiB`` or ``81559`` (a --format=csv,nounits column in MiB) as bytes."""
    if text is None:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(MiB)?", text.strip())
    return int(float(m[1]) * _MIB) if m else None


# -- NVIDIA -------------------------------------------------------------------------------------------

NVIDIA_QUERY = "name,memory.total,driver_version"  # the columns nvidia_query reads, in this order


def nvidia_query(text: str) -> list[dict]:
    """``nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv[,noheader][,nounits]``:
    one dict per GPU with ``name``, ``memory_bytes`` and ``driver`` (None where [N/A]). A header line
    names the columns, so other column orders read too; without one, NVIDIA_QUERY's order is taken."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("$")]
    columns = NVIDIA_QUERY.split(",")
    if lines and any(c in lines[0] for c in ("name", "memory.total", "driver_version")):
        columns = [c.split("[")[0].strip() for c in lines[0].split(",")]
        lines = lines[1:]
    gpus = []
    for line in lines:
        cells = dict(zip(columns, (_cell(c) for c in line.split(",")), strict=False))
        if "name" not in cells and "memory.total" not in cells and "driver_version" not in cells:
            continue
        gpu = {}
        if "name" in cells:
            gpu["name"] = cells["name"]
        if "memory.total" in cells:
            gpu["memory_bytes"] = _mib_bytes(cells["memory.total"])
        if "driver_version" in cells:
            gpu["driver"] = cells["driver_version"]
        gpus.append(gpu)
    return gpus


_NVIDIA_HEAD = re.compile(r"(?:Driver|KMD) Version:\s*(\S+)\s+CUDA (?:UMD )?Version:\s*(\S+)")
_NVIDIA_ROW = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|")
_NVIDIA_MEM = re.compile(r"\|\s*(?:\d+MiB|N/A)\s*/\s*(\d+)MiB\s*\|")


def nvidia_table(text: str) -> dict:
    """Plain ``nvidia-smi``'s table: ``driver`` and ``cuda`` from its header (the 2026 spelling "KMD
    Version ... CUDA UMD Version" too) and each GPU's ``name`` and ``memory_bytes`` (None where the
    cell says Not Supported: unified memory). Names are as the table prints them, cut at its width."""
    out: dict = {"gpus": []}
    if m := _NVIDIA_HEAD.search(text):
        out["driver"], out["cuda"] = m[1], m[2]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := _NVIDIA_ROW.match(line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            mem = _NVIDIA_MEM.search(nxt)
            out["gpus"].append({"name": m[2].strip(), "memory_bytes": int(mem[1]) * _MIB if mem else None})
    return out


# -- AMD ----------------------------------------------------------------------------------------------

_HEX_ID = re.compile(r"0x[0-9a-fA-F]+")
_ROCM_NAMES = ("Card Series", "Card series", "Device Name")


def rocm_json(text: str) -> dict:
    """``rocm-smi --showproductname --showmeminfo vram --showdriverversion --json``: each card's
    ``name`` (None where the tool printed a PCI id instead, as ROCm 4.3 did) and ``memory_bytes``
    (VRAM total), and the ``driver`` from the system block. ValueError when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("rocm-smi gave no JSON (run it with --json)") from None
    if not isinstance(data, dict):
        raise ValueError("rocm-smi's JSON is not an object of cards")
    cards = []
    for key, card in data.items():
        if not key.startswith("card") or not isinstance(card, dict):
            continue
        names = [str(card[k]).strip() for k in _ROCM_NAMES if card.get(k)]
        name = next((n for n in names if not _HEX_ID.fullmatch(n) and n.lower() not in _NA), None)
        total = card.get("VRAM Total Memory (B)")
        cards.append({"name": name, "memory_bytes": int(total) if str(total or "").isdigit() else None})
    system = data.get("system") if isinstance(data.get("system"), dict) else {}
    return {"gpus": cards, "driver": _cell(str(system.get("Driver version", "")))}


_AMD_GPU = re.compile(r"^GPU:\s*(\d+)\s*$")
_AMD_KEY = re.compile(r"^\s+([A-Z_]+):\s*(.*)$")
_AMD_SECTION = re.compile(r"^\s+([A-Z_]+):\s*$")
_AMD_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(MB|GB|MiB|GiB)?")


def amd_smi_static(text: str) -> list[dict]:
    """``amd-smi static``'s text: per GPU the ASIC's ``name`` (MARKET_NAME), the DRIVER's
    ``driver`` version and the VRAM SIZE as ``memory_bytes`` (amd-smi prints MB meaning MiB); a
    section the command was not asked for reads as None."""
    gpus: list[dict] = []
    section = ""
    for line in text.splitlines():
        if _AMD_GPU.match(line):
            gpus.append({"name": None, "driver": None, "memory_bytes": None})
            section = ""
            continue
        if not gpus:
            continue
        if m := _AMD_SECTION.match(line):
            section = m[1]
            continue
        m = _AMD_KEY.match(line)
        if not m:
            continue
        key, value = m[1], _cell(m[2])
        if section == "ASIC" and key == "MARKET_NAME":
            gpus[-1]["name"] = value
        elif section == "DRIVER" and key == "VERSION":
            gpus[-1]["driver"] = value
        elif section == "VRAM" and key == "SIZE" and value and (s := _AMD_SIZE.fullmatch(value)):
            scale = 2**30 if (s[2] or "").startswith("G") else _MIB
            gpus[-1]["memory_bytes"] = int(float(s[1]) * scale)
    return gpus


# -- CPU, memory, OS (Linux and macOS) -----------------------------------------------------------------


def lscpu(text: str) -> dict:
    """``lscpu``: the CPU ``model`` (each cluster's model joined with " + " on big.LITTLE chips),
    physical ``cores`` (each cluster's cores per socket x sockets, summed) and ``logical_cpus``."""
    models: list[str] = []
    cores = 0
    per_socket: int | None = None
    logical = None
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "CPU(s)" and value.isdigit() and logical is None:
            logical = int(value)
        elif key == "Model name":
            models.append(value)
        elif key == "Core(s) per socket" and value.isdigit():
            per_socket = int(value)
        elif key in ("Socket(s)", "Cluster(s)") and value.isdigit() and per_socket is not None:
            cores += per_socket * int(value)
            per_socket = None
    out: dict = {}
    if models:
        out["model"] = " + ".join(dict.fromkeys(models))
    if cores:
        out["cores"] = cores
    if logical:
        out["logical_cpus"] = logical
    return out


def cpuinfo_model(text: str) -> str | None:
    """The first ``model name`` of /proc/cpuinfo (x86); None where it has none (most Arm kernels)."""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return m[1].strip() if m else None


def meminfo_bytes(text: str) -> int | None:
    """MemTotal of /proc/meminfo in bytes (the kernel prints kB meaning KiB)."""
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return int(m[1]) * 1024 if m else None


def os_release(text: str) -> str | None:
    """PRETTY_NAME of /etc/os-release (else NAME and VERSION_ID), quotes taken off."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"').strip("'")
    if values.get("PRETTY_NAME"):
        return values["PRETTY_NAME"]
    name = " ".join(v for v in (values.get("NAME"), values.get("VERSION_ID")) if v)
    return name or None


def sysctl(text: str) -> dict[str, str]:
    """``sysctl NAME...`` (macOS, the BSDs): ``name: value`` lines as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def mac_machine(values: dict[str, str]) -> dict:
    """What macOS's sysctl states of the machine: the chip (``machdep.cpu.brand_string``), its
    cores (``hw.physicalcpu``, else ``machdep.cpu.core_count``), logical CPUs (``hw.ncpu``),
    the memory (``hw.memsize``, bytes) and the kernel (``kern.osrelease``)."""
    out: dict = {}
    if values.get("machdep.cpu.brand_string"):
        out["model"] = values["machdep.cpu.brand_string"]
    for key in ("hw.physicalcpu", "machdep.cpu.core_count"):
        if values.get(key, "").isdigit():
            out["cores"] = int(values[key])
            break
    if values.get("hw.ncpu", "").isdigit():
        out["logical_cpus"] = int(values["hw.ncpu"])
    if values.get("hw.memsize", "").isdigit():
        out["memory_bytes"] = int(values["hw.memsize"])
    if values.get("kern.osrelease"):
        out["kernel"] = values["kern.osrelease"]
    return out


# -- containers and engine logs -------------------------------------------------------------------------


def containerenv_image(text: str) -> str | None:
    """The ``image="..."`` line of /run/.containerenv (Podman writes it in every container)."""
    m = re.search(r'^image="([^"]*)"', text, re.MULTILINE)
    return m[1] or None if m else None


_PUBLISHED = re.compile(r"(?:[\d.]+|\[::\]|::):(\d+)->(\d+)/tcp")


def docker_ps_image(text: str, port: int) -> str | None:
    """The image of the running container that publishes host ``port``, from
    ``docker ps --format '{{.Image}}\\t{{.Ports}}'`` (or the plain table, whose IMAGE is column 2)."""
    for line in text.splitlines():
        if "\t" in line:
            image, _, ports = line.partition("\t")
        else:
            cells = re.split(r"\s{2,}", line.strip())
            if len(cells) < 2 or cells[0] == "CONTAINER ID":
                continue
            image, ports = cells[1], line
        if any(int(host) == port for host, _ in _PUBLISHED.findall(ports)):
            return image.strip() or None
    return None


_USING_DEVICE = re.compile(r"using device (\S+) \((.*?)\)(?: \([^()]*\))? - \d+ MiB free")
_DEVICE_NUMBER = re.compile(r"^\s*Device (\d+): (.+?), (?:compute capability|gfx)")
_VULKAN_LINE = re.compile(r"ggml_vulkan: (\d+) = (.+?)(?: \(|\s+\||$)")


def engine_log_devices(text: str) -> list[dict]:
    """The accelerators a llama.cpp load log names: ``using device Vulkan0 (NAME)`` lines, else
    the backends' own ``ggml_vulkan: 0 = NAME | ...`` and ``Device 0: NAME, compute capability``
    lines (ROCm's, which name a gfx target, as ROCm0). Each as ``{"device": ..., "name": ...}``,
    in the order first named."""
    found: dict[str, str] = {}
    for m in _USING_DEVICE.finditer(text):
        found.setdefault(m[1], m[2])
    if not found:
        gpu = "ROCm" if "ROCm devices" in text else "CUDA"
        for line in text.splitlines():
            if m := _VULKAN_LINE.search(line):
                found.setdefault(f"Vulkan{m[1]}", m[2].strip())
            elif m := _DEVICE_NUMBER.search(line):
                found.setdefault(f"{gpu}{m[1]}", m[2].strip())
    return [{"device": k, "name": v} for k, v in found.items()]
