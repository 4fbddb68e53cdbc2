"""The per-workload and per-turn tables, from hand-made level records."""

from harness.report.workload_tables import has_workload, markdown, turn_rows, workload_rows

DIST = {"p50": None, "p90": None, "p95": None, "p99": None, "mean": None}


def level(**extra):
    return {"label": "a", "concurrency": 4, "arrival": "closed", "workload": {"kind": "prompts"}, **extra}


def test_the_labs_own_levels_make_no_table():
    assert not has_workload(level()) and not has_workload({"label": "a", "concurrency": 1})
    assert markdown([level(), level()]) == []


def test_a_burst_level_shows_its_lateness_and_spread():
    rec = level(
        arrival="gamma",
        burstiness=0.5,
        rate_rps=50,
        schedule_lateness_s={**DIST, "p50": 0.0012, "p99": 0.0041},
        departure_gap_cv=1.4142,
    )
    (row,) = workload_rows([rec])
    assert row[1] == "50/s" and row[4] == "gamma K=0.5" and row[7] == "1.20 / 4.10" and row[8] == "1.41"


def test_a_conversation_level_gets_its_turn_table():
    turn = {"turn": 2, "requests": 8, "completed": 7, "prompt_tokens_mean": 190.5, "cached_share": 0.64}
    turn.update(ttft_s={**DIST, "p50": 0.14, "p90": 0.2}, tpot_s={**DIST, "p50": 0.0214})
    rec = level(workload={"kind": "conversations", "turns": "fixed:3"}, per_turn=[turn])
    assert turn_rows(rec) == [["2", "7/8", "0.140", "0.200", "21.4", "190.5", "64%"]]
    text = "\n".join(markdown([rec]))
    assert "turns fixed:3" in text and "Turns of a at c = 4:" in text and "| 64%" in text
