"""The hand-over between engines (engines lab: confirm memory has been released), judged from
hand-made readings: what came back, what did not with the lab's remedy, and the tolerance."""

from __future__ import annotations

from harness.engines import handover


def test_everything_back_within_the_tolerance():
    before = {"mem_available_mb": 10_000.0, "gpu_used_mb": 300.0}
    after = {"mem_available_mb": 9_900.0, "gpu_used_mb": 310.0}
    engine = {"what": "the engine's processes", "left_mb": 0.0, "alive": 0, "left": "no process of it alive"}
    found = handover.judge(before, after, engine, held_mb=800.0)
    assert found["released"] is True and found["warning"] is None
    assert found["tolerance_mb"] == 512.0
    assert [(r["source"], r["left_mb"]) for r in found["readings"]] == [
        ("engine", 0.0),
        ("mem_available_mb", 100.0),
        ("gpu_used_mb", 10.0),
    ]
    assert handover.summary(found) == (
        "memory released (left after the stop: the engine's processes +0 MB, MemAvailable +100 MB, "
        "nvidia-smi memory.used +10 MB; tolerance 512 MB, MemAvailable 1024 MB)"
    )


def test_a_card_still_full_is_named_with_its_remedy():
    found = handover.judge(
        {"gpu_used_mb": 400.0}, {"gpu_used_mb": 15_400.0}, {"left_mb": 0.0, "alive": 0}, held_mb=16_000.0
    )
    assert found["released"] is False and found["tolerance_mb"] == 1600.0  # a tenth of 16 GB
    assert found["warning"].startswith(
        "memory not released after the stop: nvidia-smi memory.used: 15000 MB not returned "
        "(tolerance 1600 MB); nvidia-smi --query-compute-apps=pid,used_memory --format=csv shows which"
    )


def test_a_surviving_process_is_never_a_hand_over_however_small():
    engine = {
        "what": "the engine's processes",
        "left_mb": 1.2,
        "alive": 1,
        "left": "pid 42 still alive (1 MB): kill 42",
    }
    found = handover.judge({}, {}, engine, held_mb=500.0)
    assert found["released"] is False
    assert "the engine's processes: 1 MB not returned" in found["warning"]
    assert (
        "stop what is left of it before the next engine starts (pid 42 still alive (1 MB): kill 42)"
        in found["warning"]
    )


def test_memavailable_shrinking_and_a_service_that_kept_its_model():
    found = handover.judge(
        {"mem_available_mb": 20_000.0},
        {"mem_available_mb": 14_000.0},
        {"what": "the service (its model unloaded)", "before_mb": 300.0, "after_mb": 5_300.0},
        held_mb=5_500.0,
    )
    assert found["released"] is False
    assert [(r["source"], r["left_mb"], r["released"]) for r in found["readings"]] == [
        ("engine", 5000.0, False),
        ("mem_available_mb", 6000.0, False),
    ]
    assert "ps aux --sort=-rss" in found["warning"]
    assert "the service held 300 MB before the load" in found["readings"][0]["left"]
    assert "MemAvailable: 6000 MB not returned (tolerance 1024 MB)" in found["warning"]


def test_memavailable_short_with_the_engine_gone_names_the_other_causes():
    found = handover.judge(
        {"mem_available_mb": 20_000.0}, {"mem_available_mb": 18_500.0}, {"left_mb": 0.0, "alive": 0}, 300.0
    )
    assert [r["released"] for r in found["readings"]] == [True, False]
    assert "no process of the engine is left, so another program grew meanwhile" in found["warning"]
    assert "ls -la /dev/shm" in found["warning"]


def test_nothing_to_read_is_no_verdict():
    found = handover.judge({}, {}, {"before_mb": None, "after_mb": 10.0}, held_mb=None)
    assert found["released"] is None and found["readings"] == []
    assert handover.summary(found) == "no memory reading to compare"
