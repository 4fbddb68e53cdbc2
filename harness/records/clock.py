"""The wall clock and the process id, read here at the edge so the record builders stay pure:
a record's stamp and a run's id are made from what this module reads."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from harness.records.level import run_id_for
from harness.records.base import stamp


def now_stamp() -> str:
    """Now, in the records' one stamp format (ISO 8601 in UTC with a Z)."""
    return stamp(datetime.now(timezone.utc))


def new_run_id() -> str:
    """A new run id for this process, started now."""
    return run_id_for(datetime.now(timezone.utc), os.getpid())
