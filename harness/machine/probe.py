"""The outside world of the machine part: run the tools, read the files, once per process.

``part_for(record)`` is what the notebook writer calls for every record it writes. The tools run
once per process and endpoint (bounded, a few seconds each); ``configure`` sets the engine log
and whether the host name may be written, from the command line (``harness.options.machine``).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from functools import lru_cache
from typing import Any, Mapping
from urllib.parse import urlsplit

from harness.errors import ConfigError
from harness.machine import part, readers
from harness.machine.part import FACTS

TIMEOUT_S = 5.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}

# What is run on each system; the keys are part.build's.
LINUX_TOOLS = {
    "lscpu": ["lscpu"],
    "nvidia-smi": ["nvidia-smi", f"--query-gpu={readers.NVIDIA_QUERY}", "--format=csv,noheader,nounits"],
    "nvidia-smi-table": ["nvidia-smi"],
    "rocm-smi": ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"],
    "amd-smi": ["amd-smi", "static", "--asic", "--driver", "--vram"],
}
MAC_TOOLS = {
    "sysctl": [
        "sysctl",
        "machdep.cpu.brand_string",
        "hw.physicalcpu",
        "hw.ncpu",
        "hw.memsize",
        "kern.osrelease",
    ],
    "sw_vers": ["sw_vers"],
}
FILES = {
    "cpuinfo": "/proc/cpuinfo",
    "meminfo": "/proc/meminfo",
    "os-release": "/etc/os-release",
    "containerenv": "/run/.containerenv",
    "rocm-version": "/opt/rocm/.info/version",
}

_settings: dict[str, Any] = {"engine_log": None, "host_name": False}


def configure(engine_log: str | None = None, host_name: bool = False) -> None:
    """What this process's records say beyond the probe: the engine log whose devices they name,
    and the host name (left out unless asked for). ConfigError when the log is not a file."""
    if engine_log and not os.path.isfile(engine_log):
        raise ConfigError(f"--engine-log {engine_log}: no such file; give the engine's log file")
    _settings.update(engine_log=engine_log or None, host_name=bool(host_name))
    _outputs.cache_clear()


def part_for(record: Mapping[str, Any]) -> dict:
    """The machine part for ``record``: the machine this process runs on, seen from here, with
    whether the record's endpoint (``base_url``) is served on it."""
    base_url = record.get("base_url")
    here, why, port = _endpoint(base_url if isinstance(base_url, str) else None)
    outputs = _outputs(port if here else 0)
    facts = {
        FACTS.system: platform.system(),
        FACTS.arch: platform.machine(),
        FACTS.kernel: platform.release(),
        FACTS.logical_cpus: os.cpu_count(),
        FACTS.endpoint_here: here,
        FACTS.endpoint_why: why,
        FACTS.port: port,
        FACTS.dockerenv: os.path.exists("/.dockerenv"),
        FACTS.host_name: socket.gethostname() if _settings["host_name"] else None,
    }
    return part.build(outputs, facts)


def _endpoint(base_url: str | None) -> tuple[bool | None, str | None, int]:
    """Whether the endpoint's host is this machine (a loopback name, or an address this machine can
    bind), why not known, and its port."""
    if not base_url:
        return None, "the record names no endpoint", 0
    split = urlsplit(base_url)
    host = split.hostname or ""
    port = split.port or (443 if split.scheme == "https" else 80)
    if host in _LOOPBACK or host.startswith("127.") or host == socket.gethostname():
        return True, None, port
    try:
        address = socket.getaddrinfo(host, None)[0][4][0]
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
            probe.bind((address, 0))  # binds only to an address of this machine; sends nothing
        return True, None, port
    except OSError:
        return False, None, port


@lru_cache(maxsize=8)
def _outputs(port: int) -> dict[str, part.Output]:
    tools = MAC_TOOLS if platform.system() == "Darwin" else LINUX_TOOLS
    outputs: dict[str, part.Output] = {key: _run(argv) for key, argv in tools.items()}
    for key, path in FILES.items():
        outputs[key] = _read(path)
    if port:
        outputs["docker-ps"] = _run(["docker", "ps", "--format", "{{.Image}}\t{{.Ports}}"])
    log = _settings["engine_log"]
    if log:
        outputs["engine-log"] = _read(log, limit=8 * 2**20)
    return outputs


def _run(argv: list[str]) -> part.Output:
    """The tool's standard output, or why there is none, in one line."""
    exe = shutil.which(argv[0])
    if exe is None:
        return part.Missing(f"{argv[0]} is not on PATH")
    try:
        done = subprocess.run(
            [exe, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return part.Missing(f"{argv[0]} did not answer within {TIMEOUT_S:g} s")
    except OSError as exc:
        return part.Missing(f"{argv[0]} could not run ({exc.strerror or exc})")
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return part.Missing(
            f"{argv[0]} failed (exit {done.returncode}): {said[0][:160] if said else 'no message'}"
        )
    return done.stdout


def _read(path: str, limit: int = 2**20) -> part.Output:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except FileNotFoundError:
        return part.Missing(f"{path} does not exist")
    except OSError as exc:
        return part.Missing(f"{path} could not be read ({exc.strerror or exc})")
