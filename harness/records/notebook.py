"""Records are the contract between measuring and reporting (docs/architecture.md, "Contracts").

A record is one JSON object on one line of a notebook file. The notebook may also hold prose and
other labs' lines: readers skip what is not theirs. Every kind of record has a JSON Schema in the
top-level ``schemas/`` folder; writing validates first (an invalid record is never written) and
reading validates each line, reporting the file, line and field of anything invalid.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from contextlib import suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from harness import paths
from harness.records.level import LevelRecord
from harness.records.sample import SAMPLE
from harness.records.base import HEAD, is_level, non_finite
from harness.safe_text import redact_tree
from harness.errors import ConfigError, SchemaError
from harness.machine import probe

SCHEMA_DIR = paths.schemas_dir()


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """The schema ``schemas/<name>.schema.json``, checked to be a valid Draft 2020-12 schema."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise SchemaError(f"no schema named {name!r} (looked for {path}); is the checkout complete?")
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@lru_cache(maxsize=1)
def _registry() -> Registry:
    """Every schema by its ``$id``, so one may refer to another (``{"$ref": "machine"}``)."""
    found = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        schema = load_schema(path.name.removesuffix(".schema.json"))
        found.append((schema["$id"], Resource.from_contents(schema, default_specification=DRAFT202012)))
    return Registry().with_resources(found)


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


@lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(name), registry=_registry())


def problems(record: Any, schema_name: str) -> list[str]:
    """Every way ``record`` fails its schema, as ``field: message`` strings (empty when valid)."""
    validator = _validator(schema_name)
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{_field_path(e)}: {e.message}" for e in errors]


def validate(record: Any, schema_name: str, where: str = "") -> None:
    """Raise SchemaError naming the place and the first bad field, or return quietly."""
    found = problems(record, schema_name)
    if found:
        prefix = f"{where}: " if where else ""
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SchemaError(f"{prefix}{schema_name} record invalid at {found[0]}{more}")


def rehearsal_stamp(record: dict, env: Mapping[str, str] | None = None) -> dict:
    """A record written by a rehearsal's step (HARNESS_REHEARSAL set by the track runner in the
    step's environment, ``env`` where the runner writes one itself) says so, with the stand-in
    that served it: an imitation never passes for the real thing."""
    raw = (os.environ if env is None else env).get("HARNESS_REHEARSAL")
    if not raw:
        return record
    try:
        found = json.loads(raw)
    except ValueError:
        raise SchemaError("HARNESS_REHEARSAL is not JSON; it is set by `harness track --rehearse`") from None
    stamp = {HEAD.rehearsal: True, HEAD.rehearsal_track: found.get("track")}
    if found.get("stand_in"):
        stamp[HEAD.stand_in] = found["stand_in"]
    return {**record, **stamp}


def record_line(record: dict, schema_name: str, where: str = "", env: Mapping[str, str] | None = None) -> str:
    """The record as its one notebook line, after the schema and the finite-number check; no key
    this process sends survives in it, whole or in pieces (``harness.safe_text``). A notebook
    record that carries no machine part gets this machine's (``harness.machine``), so every
    record says where it was written (kinds whose schema declares ``machine``)."""
    if "machine" not in record and "machine" in load_schema(schema_name).get("properties", {}):
        record = {**record, "machine": probe.part_for(record)}
    record = redact_tree(rehearsal_stamp(record, env))
    validate(record, schema_name, where=where)
    bad = non_finite(record)
    if bad:
        raise SchemaError(f"{where + ': ' if where else ''}{schema_name} record has {bad}; nothing written")
    return json.dumps(record, separators=(", ", ": "), ensure_ascii=False, allow_nan=False)


def append_record(
    path: str | Path, record: dict, schema_name: str, env: Mapping[str, str] | None = None
) -> None:
    """Validate, then append one whole line and flush it to disk before returning (``env``: the
    environment whose HARNESS_REHEARSAL stamps it, by default this process's)."""
    append_lines(path, [record_line(record, schema_name, where=str(path), env=env)])


def sample_line(row: dict) -> str:
    """One sample's line in the samples file (its record, redacted, as JSON)."""
    return json.dumps(redact_tree(row), ensure_ascii=False, allow_nan=False)


def append_level(
    path: str | Path, record: dict, samples_path: str | Path, samples: list[dict] | Iterable[bytes]
) -> None:
    """A level's exact samples, then its record: both written or neither (a record never reaches
    the notebook without its samples, and samples whose record failed are taken back).
    ``samples``: the rows, or the bytes of their lines already written (a level's spool, read in
    pieces: ``harness.load.spill``)."""
    line = record_line(record, "level", where=str(path))
    if isinstance(samples, list):
        undo = append_lines(samples_path, [sample_line(s) for s in samples])
    else:
        undo = append_bytes(samples_path, samples)
    before = _size(path)
    try:
        append_lines(path, [line])
    except BaseException:
        if _size(path) <= before:  # the record is not there (an interrupt after it landed keeps both)
            undo()
        raise


def append_lines(path: str | Path, lines: list[str]) -> Callable[[], None]:
    """Append ``lines`` whole or not at all, in one write after a check that the file's last line
    is whole (a line cut by a crash gets its newline first, so it cannot swallow this record);
    on any failure the file is cut back to its old length. Returns an undo for the caller."""
    # a lone surrogate (a server's backslash-u-d800 escape) is written as its JSON escape, never a crash
    data = "".join(line + "\n" for line in lines).encode("utf-8", errors="backslashreplace")
    return append_bytes(path, [data])


def append_bytes(path: str | Path, pieces: Iterable[bytes]) -> Callable[[], None]:
    """``append_lines`` of whole lines already encoded, written piece by piece (a level's spool
    is not read into memory at once), under an exclusive lock on the file (``flock``: two writers
    never interleave, and the lock dies with its holder). A line cut by a crash or a SIGKILL is
    dealt with first (``_mend_tail``); whole or not at all, as there."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    kind = special_file(path)
    if kind:
        raise SchemaError(f"cannot write {path}: it is {kind}, not a regular file; nothing written")
    try:  # O_NOFOLLOW: a link put in its place after the check is refused too, never written through
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if os.path.islink(path):
            raise SchemaError(f"cannot write {path}: {_LINK}; nothing written") from None
        raise SchemaError(_cannot(path, exc)) from None
    try:
        _lock(fd)
        size, lead = _mend_tail(fd)
        whole = False
        try:
            for data in _chain(lead, pieces):
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
            whole = True
            os.fsync(fd)
        except BaseException as exc:
            if not whole or isinstance(exc, OSError):  # a whole line that landed stays
                _cut_back(fd, size)
            if isinstance(exc, OSError):
                raise SchemaError(_cannot(path, exc) + "; the file is as it was") from None
            raise
    finally:
        os.close(fd)  # and with it the lock
    return lambda: _truncate(path, size)


def _chain(first: bytes, rest: Iterable[bytes]) -> Iterable[bytes]:
    yield first
    yield from rest


def _lock(fd: int) -> None:
    """Hold the file alone until ``fd`` is closed; where the file system has no locks, go on
    unlocked (one write with O_APPEND still never interleaves two writers' bytes)."""
    with suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX)


TAIL_LIMIT = 1 << 24  # a torn tail is part of one line; past 16 MB without a newline it is no line of ours


def _mend_tail(fd: int) -> tuple[int, bytes]:
    """The file's length after mending its last line, and what must precede the new lines. A whole
    last line needs nothing. A torn record (a write cut short by a crash or a SIGKILL: it starts
    like a record and holds no whole JSON object) is cut off: its writer never returned, so no one
    was told it was written (a record joined onto a cut line ends with its newline, so an unended
    last line is one write's). Anything else unended (prose, a record missing only its newline)
    gets its newline."""
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size, b""
    start = max(0, size - TAIL_LIMIT)
    tail = os.pread(fd, size - start, start)
    cut = tail.rfind(b"\n") + 1
    if cut == 0 and start > 0:
        return size, b"\n"
    text = tail[cut:].decode("utf-8", errors="replace").strip()
    if text.startswith("{") and _parse(text)[1] is not None:
        os.ftruncate(fd, start + cut)
        return start + cut, b""
    return size, b"\n"


_LINK = "it is a symbolic link, and notebooks and samples are never written through one"


def special_file(path: str | Path, follow: bool = False) -> str | None:
    """What ``path`` is when it exists and is no regular file (opening a FIFO waits for a reader
    forever, a device or socket is no notebook; a symbolic link would send the record wherever it
    points, a file outside the run or someone else's; ``follow``: reading, where a link to a
    regular file is harmless), else None."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a device")


def _size(path: str | Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _cut_back(fd: int, size: int) -> None:
    with suppress(OSError):
        os.ftruncate(fd, size)
        os.fsync(fd)


def _truncate(path: Path, size: int) -> None:
    with suppress(OSError):
        os.truncate(path, size)


def _cannot(path: Path, exc: OSError) -> str:
    return f"cannot write {path} ({exc.strerror or type(exc).__name__})"


def check_writable(path: str | Path, what: str = "--labbook") -> None:
    """Before anything is measured: ``path`` can be appended to (its folder made if missing); one
    line (ConfigError) saying what to change when it cannot. A file it creates is removed again."""
    path = Path(path)
    existed = path.exists()
    kind = special_file(path)
    if kind == "a symbolic link":
        target = os.path.realpath(path)
        raise ConfigError(
            f"{what} {path} is a symbolic link (to {target}); records are never written through a "
            "link: give the file's own path"
        )
    if kind:
        raise ConfigError(f"{what} {path} cannot be written (it is {kind}, not a regular file); give a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(
            f"{what} {path} cannot be written ({exc.strerror or exc}); choose a writable file"
        ) from None
    if not existed:
        with suppress(OSError):
            path.unlink()


@dataclass(frozen=True)
class ReadResult:
    records: list[dict]
    warnings: list[str]
    # the chosen objects skipped as invalid (schema, or a figure past MAX_FIGURE), each with its
    # warning: a reader that must not decide on part of a run (the gate) refuses on them
    rejected: list[tuple[dict, str]] = field(default_factory=list)


def read_records(
    path: str | Path,
    schema_name: str,
    select: Callable[[dict], bool] = lambda obj: True,
) -> ReadResult:
    """Every record in ``path`` chosen by ``select`` and valid for the schema. Never raises for
    what a line holds.

    Prose lines and objects ``select`` rejects are skipped silently. Every other line (one that
    looks like a record but does not parse, or a chosen object that fails the schema) is skipped
    with a warning naming the file and the line; whole records inside a damaged line (one cut by
    a crash with the next record appended onto it) are recovered, and the warning says so. A
    last line with no newline that does not parse is a torn write, named as one.
    """
    path = Path(path)
    records: list[dict] = []
    warnings: list[str] = []
    rejected: list[tuple[dict, str]] = []
    for lineno, raw in enumerate(_lines(path), 1):
        text = raw.strip()
        if not _record_like(text):
            continue
        where = f"{path}:{lineno}"
        obj, damage = _parse(text)
        torn = damage is not None and not raw.endswith("\n")  # the last line, its write cut short
        found = [obj] if damage is None else [] if torn else _salvage(text)
        if damage is not None:
            warnings.append(_damage_line(where, damage, torn))
        for item in found:
            if not isinstance(item, dict) or not select(item):
                continue
            bad = problems(item, schema_name) or _absurd(item)
            if bad:
                said = f"{where}: {schema_name} record invalid at {bad[0]}; line skipped"
                if damage is None:  # pieces of a damaged line were warned about with the line
                    warnings.append(said)
                rejected.append((item, said))
                continue
            records.append(item)
    return ReadResult(records, warnings, rejected)


def _damage_line(where: str, damage: str, torn: bool) -> str:
    """The one warning for a line that is not JSON: a torn last line (no newline: its write was cut
    short, so nothing in it is whole) is named as such."""
    if torn:
        return f"{where}: a torn last line (a write cut short by a crash or a kill: {damage}); skipped"
    return f"{where}: not valid JSON ({damage}); whole records in it recovered, the rest skipped"


def read_levels(path: str | Path) -> tuple[list[LevelRecord], list[str]]:
    """The level lines of ``path`` as typed records, old shapes included, with ``read_records``'s
    warnings for the lines skipped."""
    found = read_records(path, LevelRecord.KIND, select=is_level)
    return [LevelRecord.read(rec) for rec in found.records], found.warnings


def read_samples(path: str | Path, levels: list[dict] | None = None) -> ReadResult:
    """The samples file's rows, each valid for ``schemas/sample.schema.json``, with
    ``read_records``'s warnings (a torn last line named as such). With ``levels`` (the notebook's
    level records), rows of a run and level that has no record are skipped too, in one warning
    for each: the run was cut between its samples and its record."""
    found = read_records(path, "sample", select=lambda obj: True)
    if levels is None:
        return found
    written = {_level_key(rec) for rec in levels}
    rows, cut = [], {}
    for row in found.records:
        key = _level_key(row)
        if key[0] is None or key in written:
            rows.append(row)
        else:
            cut[key] = cut.get(key, 0) + 1
    notes = [
        f"{path}: {n} sample(s) of {k[1]} at c={k[2]} (run {k[0]}, repeat {k[3]}) have no level record "
        "(the run was cut before its record was written); skipped"
        for k, n in cut.items()
    ]
    return ReadResult(rows, found.warnings + notes, found.rejected)


def _level_key(obj: dict) -> tuple:
    """Which run of which level a sample row or a level record belongs to (run id None: written
    before run ids, matched by label and concurrency alone)."""
    return (
        obj.get(SAMPLE.run_id),
        obj.get(SAMPLE.label),
        obj.get(SAMPLE.concurrency),
        obj.get(SAMPLE.repeat, 1),
    )


MAX_FIGURE = 1e15  # no figure a record holds comes near this (bytes of memory, epoch seconds)


def _absurd(value: Any, where: str = "") -> list[str]:
    """``[the place]`` of the first number past ``MAX_FIGURE`` (1e308 makes every sum infinite and
    every chart scale overflow), or []."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if abs(value) <= MAX_FIGURE:
            return []
        return [f"{where or '(top level)'} ({'NaN, no number' if value != value else 'a number past 1e15'})"]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _absurd(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return []


def _record_like(text: str) -> bool:
    """Whether a line is meant as a record rather than prose: it starts or ends like a JSON object,
    or holds a JSON key (a record whose start was cut off)."""
    return text.startswith("{") or text.endswith("}") or '": ' in text


def _parse(text: str):
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at column {exc.colno}"
    except (ValueError, RecursionError) as exc:
        return None, type(exc).__name__


def _salvage(text: str, tries: int = 200) -> list:
    """The whole JSON objects inside a damaged line, left to right (at most ``tries`` starts)."""
    decoder, found, i = json.JSONDecoder(), [], text.find("{")
    while i >= 0 and tries > 0:
        tries -= 1
        try:
            obj, end = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


def _lines(path: Path) -> Iterable[str]:
    if not path.exists():
        raise SchemaError(f"{path} not found; run the step that writes it first or pass its path")
    kind = special_file(path, follow=True)
    if kind:
        raise SchemaError(f"{path} is {kind}, not a regular file; pass the path of a notebook file")
    with open(path, encoding="utf-8", errors="replace") as fh:
        yield from fh
