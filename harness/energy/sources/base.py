"""The one interface every telemetry source meets, and the bounded file read the sysfs sources
share. A source is one device (a GPU, an APU's card, a RAPL zone, a Mac): ``read()`` gives one
``harness.energy.readings.Reading`` (each figure the device does not give is None with its reason)
and ``close()`` lets the device's library go. A read that fails as a whole raises
``TelemetryUnavailable`` with one line saying why; the sampler counts it and goes on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from harness.energy.readings import Reading

MAX_FILE = 64  # a sysfs number is a few bytes; nothing past this is read


class Source(Protocol):
    kind: str  # nvml, amdsmi, hwmon, rapl, powermetrics
    device: str  # what the reading names: "0: NVIDIA GB10", "card1", "package-0"

    def read(self) -> Reading: ...

    def close(self) -> None: ...


def read_text(path: Path) -> tuple[str | None, str | None]:
    """A small file's text (at most ``MAX_FILE`` bytes) and None, or None and why it could not
    be read: absent, refused (root-only, as RAPL's ``energy_uj`` is on many kernels) or an error."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, f"{path} is absent"
    except PermissionError:
        return None, f"{path} is readable by root only here"
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    try:
        return os.read(fd, MAX_FILE).decode("ascii", "replace").strip(), None
    except OSError as exc:  # a driver answers EIO or ENODATA for a figure it cannot give now
        return None, f"{path}: {exc.strerror or exc}"
    finally:
        os.close(fd)


def read_number(path: Path, scale: float = 1.0) -> tuple[float | None, str | None]:
    """A sysfs file's whole number times ``scale``, or None and why (unreadable, not a number)."""
    text, why = read_text(path)
    if text is None:
        return None, why
    try:
        value = int(text.split()[0]) if text else None
    except ValueError:
        value = None
    if value is None or value < 0:
        return None, f"{path} holds {text[:20]!r}, not a count"
    return value * scale, None
