"""The lab profile (``data/lab.yaml``): the labs' ids the records carry, which check answers which
lab task, the figures a worksheet wants, the labs' thresholds and the troubleshooting rows' text.
Code names what it computes and reads the course's facts here, so a new edition of the course is
an edit of one data file.

Pure: the profile is package data, the same bytes on every run like the code beside it. It is
read once through ``pkgutil.get_data`` (the one package-data read a pure module may make;
tests/unit/test_house.py names this module) and validated against ``schemas/lab.schema.json``."""

from __future__ import annotations

import json
import pkgutil
from typing import Any

import jsonschema
import yaml

from harness.errors import SchemaError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def _package_data(name: str) -> bytes:
    data = pkgutil.get_data("harness", name)
    if data is None:
        raise SchemaError(f"harness/{name} is missing; is the checkout or the wheel complete?")
    return data


def parse(text: str | bytes) -> dict[str, Any]:
    """A lab profile's YAML, validated against ``schemas/lab.schema.json``; every task and
    worksheet names a lab or figure the profile declares."""
    data: dict[str, Any] = yaml.safe_load(text)
    schema = json.loads(_package_data("schemas/lab.schema.json"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        where = "/".join(map(str, errors[0].path)) or "(top)"
        raise SchemaError(f"lab profile invalid at {where}: {errors[0].message}")
    unknown = sorted({t["lab"] for t in data["tasks"]} - set(data["labs"]))
    if unknown:
        raise SchemaError(f"lab profile: tasks name labs it does not declare: {', '.join(unknown)}")
    return data


PROFILE = parse(_package_data("data/lab.yaml"))
# The course ids the records carry, as the seeds' checkers read them: the serving lab's (level,
# curve summary, capacity, endpoint check, cross-check and admission records) and the engines
# lab's (single-user speed tests, feature probes, allocations).
SERVING_LAB_ID: str = PROFILE["labs"]["serving"]["id"]
ENGINES_LAB_ID: str = PROFILE["labs"]["engines"]["id"]


def threshold(name: str) -> float:
    """A single-valued threshold of the labs (``thresholds.<name>.value``)."""
    return float(PROFILE["thresholds"][name]["value"])


def band(name: str) -> tuple[float, float]:
    """A threshold given as a band (``thresholds.<name>.low`` and ``.high``)."""
    entry = PROFILE["thresholds"][name]
    return float(entry["low"]), float(entry["high"])


def values(name: str) -> tuple[float, ...]:
    """A threshold given as a list (``thresholds.<name>.values``), such as the baseline's crowds."""
    return tuple(float(v) for v in PROFILE["thresholds"][name]["values"])


def remedy(name: str) -> str:
    """A troubleshooting row's text: what was found and what the lab says to do."""
    return str(PROFILE["remedies"][name])


def worksheet(name: str) -> tuple[str, list[str]]:
    """A worksheet's title and the figures it wants, in its order."""
    sheet = PROFILE["worksheets"][name]
    return str(sheet["title"]), [str(f) for f in sheet["figures"]]


def tasks_answered_by(check: str) -> list[str]:
    """The lab tasks whose ``answered_by`` names ``check`` (a command or a module), each quoted as
    the course's own words (the word Task, its number and its title), in the profile's order."""
    return [f"Task {t['task']}: {t['title']}" for t in PROFILE["tasks"] if check in t["answered_by"]]


def task_answered_by(check: str) -> str:
    """The one lab task ``check`` answers, quoted as the course's own words."""
    found = tasks_answered_by(check)
    if len(found) != 1:
        raise KeyError(f"the lab profile names {len(found)} tasks answered by {check!r}, not one")
    return found[0]
