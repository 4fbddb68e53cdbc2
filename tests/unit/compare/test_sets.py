"""Which runs are comparable and what differs between them (harness.compare.sets)."""

from __future__ import annotations

from harness.compare import sets
from tests.unit.compare.conftest import variant


def test_the_same_run_twice_is_one_set_with_nothing_differing(baseline):
    a, b = variant(baseline, "a"), variant(baseline, "b")
    found = sets.sets([a, b])
    assert [[r.name for r in s.runs] for s in found] == [["a", "b"]]
    assert found[0].apart is None and sets.differing([a, b]) == []
    assert sets.change_words(a, b) == "nothing recorded differs"


def test_another_engine_and_slots_are_named_and_still_compared(baseline):
    a = variant(baseline, "a")
    b = variant(baseline, "b", engine="llama.cpp", server_slots=4, quant="Q4_K_M")
    assert len(sets.sets([a, b])) == 1
    assert sets.differing([a, b]) == ["engine", "quant", "server_slots"]
    assert sets.change_words(a, b) == (
        "engine practice -> llama.cpp, quantisation not stated -> Q4_K_M, slots not stated -> 4"
    )


def test_other_prompts_lengths_or_promise_stand_apart_with_the_reason(baseline):
    a = variant(baseline, "a")
    longer = variant(baseline, "longer", workload={"kind": "prompts", "input_tokens": "512"})
    answers = variant(baseline, "answers", max_tokens=64)
    promise = variant(baseline, "promise", slo_ttft_s=0.5)
    again = variant(baseline, "again")
    found = sets.sets([a, longer, answers, promise, again])
    assert [[r.name for r in s.runs] for s in found] == [["a", "again"], ["longer"], ["answers"], ["promise"]]
    assert "workload is" in found[1].apart and "in a and" in found[1].apart
    assert found[2].apart == "different conditions: max tokens is 32 in a and 64 in answers"
    assert found[3].apart == "different conditions: slo ttft s is 2.0 in a and 0.5 in promise"


def test_a_run_mixing_conditions_is_compared_with_nothing(baseline):
    half = len(baseline) // 2
    mixed = (
        variant(baseline[:half], "mixed").records + variant(baseline[half:], "mixed", max_tokens=64).records
    )
    run = sets.Run("mixed", "test", mixed)
    found = sets.sets([variant(baseline, "a"), run, variant(baseline, "b")])
    assert [[r.name for r in s.runs] for s in found] == [["a", "b"], ["mixed"]]
    assert found[1].apart.startswith("mixed mixes runs: its max tokens is 32 and 64")


def test_a_practice_runs_model_name_does_not_split_it_from_an_engines_run(baseline):
    """The practice server serves no weights: the CPU track's practice block answers to local-chat,
    its llama-server block to gemma-3-270m, and both sent the same requests."""
    practice = variant(baseline, "practice-baseline", model="local-chat")
    llama = variant(baseline, "llama-baseline", engine="llama.cpp", model="gemma-3-270m")
    found = sets.sets([practice, llama])
    assert [[r.name for r in s.runs] for s in found] == [["practice-baseline", "llama-baseline"]]
    assert sets.differing([practice, llama]) == ["engine"]
    other = variant(baseline, "other-model", engine="llama.cpp", model="qwen3-8b")
    found = sets.sets([llama, other])  # two engines' runs of other models stay apart
    assert (
        found[1].apart
        == "different conditions: model is gemma-3-270m in llama-baseline and qwen3-8b in other-model"
    )


def test_the_machine_parts_stable_facts_are_named_when_they_differ(baseline):
    spark = {"cpu": {"model": "Cortex-X925", "cores": 20}, "accelerators": [{"name": "NVIDIA GB10"}]}
    strix = {"cpu": {"model": "AMD RYZEN AI MAX+ 395"}, "accelerators": [{"name": "Radeon 8060S"}]}
    a = variant(baseline, "a", machine=spark)
    b = variant(baseline, "b", machine={**spark, "memory_bytes": 1})  # free figures are not compared
    c = variant(baseline, "c", machine=strix)
    assert sets.differing([a, b]) == []
    assert sets.differing([a, c]) == ["hardware"]
    assert (
        sets.change_words(a, c)
        == "hardware Cortex-X925 + NVIDIA GB10 -> AMD RYZEN AI MAX+ 395 + Radeon 8060S"
    )
