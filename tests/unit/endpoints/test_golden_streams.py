"""Every recorded stream (tests/corpus/streams and tests/fixtures/streams) gives the same sample as
it gave before the endpoint kinds were split out of the stream parser: the chat kind is today's
parser moved, not changed. The expected samples were written by the parser before the move
(``tests/fixtures/expected/stream-samples.json``); a difference here is a change of behaviour."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.endpoints import chat
from tests.conftest import FIXTURES, ROOT

EXPECTED = FIXTURES / "expected" / "stream-samples.json"
# fields the sample gained after the expected samples were written, and what every stream gives
ADDED = {"ttft_absent": None}
LIMITS = {"kept": 1 << 20, "cut": 7, "none": 0}  # text limits: the whole text, a cut one, none kept


def recorded() -> dict[str, bytes]:
    """Each stream's body by a short name (a corpus sample's header left out)."""
    out = {}
    for path in sorted((ROOT / "tests" / "corpus" / "streams").glob("*.sse")):
        out[f"corpus/{path.name}"] = path.read_bytes().split(b"\n---\n", 1)[1]
    for path in sorted((FIXTURES / "streams").glob("*.sse")):
        out[f"fixtures/{path.name}"] = path.read_bytes()
    return out


def replay(body: bytes, text_limit: int) -> dict:
    """The sample of ``body`` read line by line, one line each 10 ms, as a plain dict."""
    parser = chat.KIND.parser(0.0, text_limit)
    lines = body.split(b"\n")
    for i, line in enumerate(lines):
        parser.feed(line + b"\n", 0.01 * (i + 1))
    sample = parser.finish(0.01 * (len(lines) + 1))
    return json.loads(json.dumps(dataclasses.asdict(sample)))


def observed() -> dict:
    return {
        f"{name} {limit}": replay(body, LIMITS[limit])
        for name, body in recorded().items()
        for limit in LIMITS
    }


def test_every_recorded_stream_is_read_into_the_expected_samples():
    assert len(recorded()) >= 20
    assert set(json.loads(EXPECTED.read_text())) <= set(observed())  # recordings added since: no golden


@pytest.mark.parametrize("key", sorted(json.loads(EXPECTED.read_text())))
def test_a_recorded_stream_gives_its_expected_sample(key):
    name, limit = key.rsplit(" ", 1)
    got, want = replay(recorded()[name], LIMITS[limit]), json.loads(EXPECTED.read_text())[key]
    assert {k: got[k] for k in want} == want
    assert {k: got[k] for k in set(got) - set(want)} == ADDED
