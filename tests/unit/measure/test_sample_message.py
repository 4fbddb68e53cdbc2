"""A worker's sample message: every field as ``dataclasses.asdict`` would give it, and the master
rebuilds the same sample from it after the wire (msgpack, as Locust's ``Message.serialize`` and
``unserialize`` call it; Locust itself is not imported here, as its import patches the standard
library)."""

from __future__ import annotations

import dataclasses

import msgpack

from harness.measure.sample import Sample, as_message


def _filled() -> Sample:
    return Sample(
        t_send=10.0,
        ok=True,
        t_first=10.05,
        t_end=11.3,
        token_times=[10.05 + i * 0.01 for i in range(128)],
        output_tokens=128,
        token_source="usage",
        prompt_tokens=42,
        cached_tokens=16,
        finish_reason="length",
        fields=["content", "usage"],
        saw_done=True,
        timings={"predicted_ms": 1250.0},
        text="word " * 20,
        request_id="chatcmpl-1",
        clock="kernel",
        read_lags=[0.0001] * 128,
        t_sent=10.001,
        t_written=10.0011,
        merged_tokens=2,
        first_merged=True,
        tags={"conversation": 3, "turn": 1, "schedule_lateness_s": 0.0002},
        tool_calls=[{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}],
        tool_calls_dropped=1,
    )


def test_the_message_has_what_asdict_gives():
    sample = _filled()
    assert as_message(sample) == dataclasses.asdict(sample)
    assert set(as_message(Sample(t_send=0.0))) == {f.name for f in dataclasses.fields(Sample)}


def test_the_master_rebuilds_the_same_sample_after_the_wire():
    sample = _filled()
    wire = msgpack.dumps(("harness_samples", [as_message(sample)] * 2, "worker-1"))
    _, data, _ = msgpack.loads(wire, raw=False, strict_map_key=False)
    assert [Sample(**d) for d in data] == [sample, sample]
