"""A level's samples kept on disk while it runs, so a level of any length holds flat memory.

Each finished request's line for the samples file goes to the level's spool (an unnamed file
beside the samples file, gone when closed or killed), and the request is folded into a tally
(``harness.measure.tally``) whose columns of floats are spilled to unnamed files too. At the
level's end the tally gives the figures (each column read back once) and the spool is copied
into the samples file with the record (``records.notebook.append_level``: whole, or neither).
"""

from __future__ import annotations

import tempfile
from array import array
from pathlib import Path
from typing import IO, Iterator

from harness.measure.levels import sample_record
from harness.measure.sample import Sample
from harness.measure.tally import LevelTally
from harness.records.notebook import sample_line

BUFFER = 8192  # values a spilled column holds in memory (64 KiB) before it writes them out
PIECE = 1 << 20  # bytes of the spool copied into the samples file at a time


class SpillColumn:
    """A column of floats written to an unnamed file past ``BUFFER`` values: 8 bytes a value
    on disk, at most ``BUFFER`` in memory; ``values()`` reads them all back, in order."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._buffer = array("d")
        self._file: IO[bytes] | None = None
        self._written = 0

    def append(self, value: float) -> None:
        self._buffer.append(value)
        if len(self._buffer) >= BUFFER:
            self._flush()

    def extend(self, values) -> None:
        self._buffer.extend(values)
        if len(self._buffer) >= BUFFER:
            self._flush()

    def __len__(self) -> int:
        return self._written + len(self._buffer)

    def values(self) -> array:
        out = array("d")
        if self._file is not None:
            self._file.seek(0)
            out.fromfile(self._file, self._written)
        out.extend(self._buffer)
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def _flush(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self.folder)  # noqa: SIM115  (closed by close())
        self._file.seek(0, 2)
        self._buffer.tofile(self._file)
        self._written += len(self._buffer)
        self._buffer = array("d")


class LevelSpool:
    """One closed level's samples as they finish: each one's samples-file line (label, level,
    the sweep's ``mark``) in the spool, and its figures in ``tally``; no sample is kept."""

    def __init__(self, label: str, concurrency: float, mark: dict, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.label, self.concurrency, self.mark, self.folder = label, concurrency, mark, folder
        self._columns: list[SpillColumn] = []
        self.tally = LevelTally(column=self._column)
        self._file = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115  (closed by close())
        self.lines = 0

    def _column(self) -> SpillColumn:
        column = SpillColumn(self.folder)
        self._columns.append(column)
        return column

    def add(self, sample: Sample) -> None:
        row = {**sample_record(sample, self.label, self.concurrency), **self.mark}
        data = (sample_line(row) + "\n").encode("utf-8", errors="backslashreplace")
        self._file.write(data)
        self.lines += 1
        self.tally.add(sample)

    def pieces(self) -> Iterator[bytes]:
        """The spool's bytes from its start, ``PIECE`` at a time (whole lines once joined)."""
        self._file.flush()
        self._file.seek(0)
        while piece := self._file.read(PIECE):
            yield piece

    def close(self) -> None:
        self._file.close()
        for column in self._columns:
            column.close()
