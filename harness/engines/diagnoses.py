"""Why an engine did not come up: match its log against the labs' troubleshooting rows
(``data/diagnoses.yaml``) and name the cause, the remedy and the line that showed it. Pure: the
rules and the text come in, a :class:`Diagnosis` (or None) goes out."""

from __future__ import annotations

import re
from dataclasses import dataclass

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

LINE_LIMIT = 240  # a matching line is quoted up to this many characters


@dataclass(frozen=True)
class Diagnosis:
    """One troubleshooting row that matched: its id, cause and remedy, and the log line."""

    id: str
    cause: str
    remedy: str
    line: str

    def text(self) -> str:
        """The one line printed under a failed start."""
        return f"{self.cause}: {self.remedy} (log: {self.line})"

    def to_dict(self) -> dict:
        return {"id": self.id, "cause": self.cause, "remedy": self.remedy, "line": self.line}


def applies(rule: dict, engine: str) -> bool:
    """Whether a rule is about this engine (its ``engines`` are name prefixes: ``vllm`` covers
    ``vllm-cpu`` and ``vllm-compose``)."""
    return any(engine == e or engine.startswith(e + "-") for e in rule["engines"])


def diagnose(text: str, rules: list[dict], engine: str) -> Diagnosis | None:
    """The first rule (in the table's order) about ``engine`` whose pattern matches a line of
    ``text``; the line quoted is the last one that matches (the most recent), stripped, and when
    longer than LINE_LIMIT, from where the pattern matched, cut at the limit."""
    lines = text.splitlines()
    for rule in rules:
        if not applies(rule, engine):
            continue
        pattern = re.compile(rule["pattern"])
        hits = [(line.strip(), m) for line in lines if (m := pattern.search(line.strip()))]
        if hits:
            line, m = hits[-1]
            if len(line) > LINE_LIMIT:  # a long line is quoted from what matched (past its log prefix)
                line = line[m.start() :]
                line = line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 3] + "..."
            return Diagnosis(rule["id"], rule["cause"], rule["remedy"], line)
    return None
