"""One error hierarchy for the whole harness.

    HarnessError                 anything the user can act on; the CLI prints it in one line
    ├── ConfigError              a profile, plan, option or argument is wrong
    ├── SchemaError              a record or data file does not match its JSON Schema
    ├── TargetError              the server under test misbehaved
    │   ├── TargetUnreachable    nothing answers at the address
    │   └── TargetTimeout        it answered too slowly
    ├── EngineError              starting, watching or stopping an engine failed
    │   └── PortBusy             the port is already taken by another process
    ├── InstallError             a required binary or model file is missing or corrupt
    └── TelemetryUnavailable     a telemetry source asked for by name is absent or refused here

Foreign exceptions are mapped at the boundary with ``raise ... from exc``. Every message says
what failed, where, and what to do next.
"""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


class HarnessError(Exception):
    """Base class. ``str(err)`` is the one-line message shown to the user."""

    exit_code = 2


class ConfigError(HarnessError):
    pass


class SchemaError(HarnessError):
    pass


class TargetError(HarnessError):
    pass


class TargetUnreachable(TargetError):
    pass


class TargetTimeout(TargetError):
    pass


class EngineError(HarnessError):
    pass


class PortBusy(EngineError):
    pass


class InstallError(HarnessError):
    pass


class TelemetryUnavailable(HarnessError):
    """``--telemetry nvml`` (or another source by name) where that source is absent or refused:
    the message is the one line saying which and why (harness/io/telemetry/detect.py)."""
