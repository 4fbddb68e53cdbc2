"""Curve arithmetic on hand-made levels, the lab's check rules, and `harness summarise`."""

import json

import pytest

from harness.measure import curves
from harness.cli import main
from harness.measure.levels import LAB_ID


def level(c, tok_s, tpot50, ttft90=0.5, tpot90=None, failed=0, ttft95=None, **extra):
    return {
        "lab": LAB_ID,
        "label": extra.pop("label", "x"),
        "concurrency": c,
        "requests": 10,
        "completed": 10 - failed,
        "failed": failed,
        "wall_s": 10.0,
        "output_tokens": int(tok_s * 10),
        "output_tokens_per_s": tok_s,
        "ttft_s": {"p50": ttft90 / 2, "p90": ttft90, "p95": ttft95 if ttft95 is not None else ttft90},
        "tpot_s": {"p50": tpot50, "p90": tpot90 if tpot90 is not None else tpot50 * 1.1},
        "slo_ttft_s": 2.0,
        "slo_tpot_s": 0.1,
        **extra,
    }


# TPOT = 20 ms + 2 ms x c exactly, c / TPOT tokens per second
CURVE = {
    c: level(c, round(c / (0.02 + 0.002 * c), 3), 0.02 + 0.002 * c, server_slots=20) for c in (1, 5, 10, 20)
}


def test_fit_recovers_a_and_b_and_the_ceiling():
    d = curves.curve(CURVE)
    assert d.fit["a_s"] == pytest.approx(0.02) and d.fit["b_s"] == pytest.approx(0.002)
    assert d.ceiling == pytest.approx(500) and d.c_at_slo == pytest.approx(40)
    assert d.scaling[1] == 1.0 and d.scaling[20] == pytest.approx(20 / 0.06 / (20 * 1 / 0.022), rel=1e-3)


def test_knee_is_the_first_step_gaining_under_half_a_request():
    # one request alone: 45.45 tok/s; 1->5 gains 30.3 per added request, 5->10 gains 16.7 (< 22.7)
    assert curves.curve(CURVE).knee == (5, 10)
    flat = {1: level(1, 50, 0.02), 2: level(2, 98, 0.02), 4: level(4, 120, 0.03)}
    assert curves.curve(flat).knee == (2, 4)


def test_operating_point_and_capacity():
    lv = {
        1: level(1, 50, 0.02, ttft90=0.2),
        8: level(8, 300, 0.03, ttft90=0.4),
        16: level(16, 310, 0.03, ttft90=3.0, ttft95=3.2),
    }
    assert curves.curve(lv).operating_point == 8
    assert curves.capacity_within(lv, 0.5) == 8
    assert curves.capacity_within(lv, 0.1) is None
    assert curves.copies_for(120, 8) == (15, 18)  # seed 002: 15 copies, 18 with spares


def test_fit_uses_only_levels_within_the_slots():
    lv = dict(CURVE)
    lv[40] = level(40, 300, 0.5, server_slots=20)  # queueing beyond the slots must not bend the fit
    for r in lv.values():
        r["server_slots"] = 20
    assert curves.curve(lv).fit["levels_used"] == [1, 5, 10, 20]


def write_book(path, records):
    path.write_text("# notes\n" + "".join(json.dumps(r) + "\n" for r in records))
    return path


def test_check_rules(tmp_path):
    base = [
        level(
            c,
            10 * c,
            0.02,
            label="base",
            prompt_set="mixed",
            token_counts="usage",
            host="box",
            quant="q",
            context_length=4096,
            server_slots=20,
        )
        for c in (1, 5, 10, 20)
    ]
    pair = [
        level(
            1,
            10,
            0.02,
            label="ctl",
            prompt_set="unique-prefix",
            prompt_tokens_mean=1400,
            cached_tokens_mean=4,
        ),
        level(
            1,
            10,
            0.02,
            label="sh",
            prompt_set="shared-prefix",
            prompt_tokens_mean=1400,
            cached_tokens_mean=1380,
        ),
    ]
    labels = curves.by_label(base + pair)
    assert all(v == "PASS" for v, _ in curves.check(labels))
    bad = curves.by_label(base + [dict(pair[1], cached_tokens_mean=10)] + pair[:1])
    assert ("FAIL", "sh at c=1: 1% of the prompt was served from cache (needs > 50 %)") in curves.check(bad)
    book = write_book(tmp_path / "b.md", base + [dict(pair[1], cached_tokens_mean=10)] + pair[:1])
    assert main(["summarise", "--labbook", str(book), "--check"]) == 1
    good = write_book(tmp_path / "g.md", base + pair)
    assert main(["summarise", "--labbook", str(good), "--check"]) == 0


def test_summarise_reads_seed_shaped_lines_and_records_a_summary(tmp_path, capsys):
    # A line as the lab's own script writes it: no harness fields, no p95, sort_keys order.
    seed_line = level(1, 40.0, 0.025, label="seedrun")
    del seed_line["ttft_s"]["p95"]
    book = write_book(
        tmp_path / "labbook.md", [seed_line] + [dict(r, label="seedrun") for r in CURVE.values()][1:]
    )
    assert (
        main(
            [
                "summarise",
                "--labbook",
                str(book),
                "--label",
                "seedrun",
                "--markdown",
                "--record",
                "--promise",
                "1.0",
                "--peak",
                "120",
                "--chart",
                str(tmp_path / "c.png"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| c " in out and "TPOT p50 fit: " in out and "120 / 20 -> 6 copies, 8 with 20% spares" in out
    assert (tmp_path / "c.png").stat().st_size > 10_000
    summary = json.loads(book.read_text().strip().splitlines()[-1])
    assert summary["record"] == "curve-summary" and summary["capacity_within_promise"] == 20


def test_corrupt_line_is_warned_with_its_number(tmp_path, capsys):
    book = write_book(tmp_path / "b.md", list(CURVE.values()))
    with open(book, "a") as fh:
        fh.write('{"lab": "' + LAB_ID + '", "concurrency": 3, "ttft_s": \n')
    assert main(["summarise", "--labbook", str(book), "--list"]) == 0
    assert f"{book}:6: not valid JSON" in capsys.readouterr().err


def test_unknown_label_is_one_line(tmp_path, capsys):
    book = write_book(tmp_path / "b.md", list(CURVE.values()))
    assert main(["summarise", "--labbook", str(book), "--label", "nope"]) == 2
    assert "labels present: x" in capsys.readouterr().err


def test_check_warns_when_the_client_was_the_limit():
    base = [
        level(
            c,
            10 * c,
            0.02,
            label="base",
            prompt_set="mixed",
            token_counts="usage",
            host="box",
            quant="q",
            context_length=4096,
            server_slots=20,
            client_limited=c == 20,
        )
        for c in (1, 5, 10, 20)
    ]
    findings = curves.check(curves.by_label(base))
    assert (
        "WARN",
        "base: the client was the limit at c=20; rerun those levels with --processes or from another machine",
    ) in findings
    kept_up = curves.check(curves.by_label([dict(r, client_limited=False) for r in base]))
    assert ("PASS", "base: the client kept up at every level") in kept_up
    seed_written = curves.check(
        curves.by_label([{k: v for k, v in r.items() if k != "client_limited"} for r in base])
    )
    assert not any("client" in finding for _, finding in seed_written)  # the lab's records do not say


def _kit_levels(slots_recorded=None) -> dict[int, dict]:
    """Levels as an 8-seat server gives them: a decode step of a + b x running (17.1 + 1.07 ms),
    at most 8 running, so TPOT and throughput stop growing from c = 8."""
    a, b, seats = 0.0171, 0.00107, 8
    out = {}
    for c in (1, 4, 8, 16):
        running = min(c, seats)
        step = a + b * running
        out[c] = {
            "concurrency": c,
            "completed": 32,
            "failed": 0,
            "output_tokens_per_s": round(running / step * 0.97, 1),  # a little under the bound
            "tpot_s": {"p50": step, "p90": step},
            "ttft_s": {"p50": 0.1, "p90": 0.2},
            "server_slots": slots_recorded,
        }
    return out


def test_fit_without_slots_stops_at_the_throughput_plateau_and_says_so():
    from harness.measure.curves import curve

    d = curve(_kit_levels())
    assert d.fit["levels_used"] == [1, 4, 8] and d.fit["slots"] == 8
    assert "inferred from throughput" in d.fit["slots_source"] and "c=8" in d.fit["slots_source"]
    assert abs(d.fit["a_s"] - 0.0171) < 1e-9 and abs(d.fit["b_s"] - 0.00107) < 1e-9
    plateau = max(r["output_tokens_per_s"] for r in _kit_levels().values())
    assert abs(d.fit["seat_ceiling"] - plateau) / plateau < 0.10


def test_given_slots_win_and_no_plateau_uses_every_level():
    from harness.measure.curves import curve, infer_slots

    d = curve(_kit_levels(slots_recorded=4))
    assert d.fit["levels_used"] == [1, 4] and d.fit["slots_source"].startswith("given: 4")
    rising = {c: {"output_tokens_per_s": 50.0 * c} for c in (1, 2, 4)}
    assert infer_slots(rising, [1, 2, 4]) == (
        None,
        "not given and no throughput plateau in these levels: every level used",
    )


# TPOT p50 falling then rising steeply: the least-squares line's base comes out negative (about -11 ms)
NEGATIVE_BASE = {
    c: level(c, 40.0 * c, tpot, server_slots=8)
    for c, tpot in ((1, 0.010), (2, 0.004), (4, 0.020), (8, 0.060))
}


def test_a_negative_fit_base_is_no_fit_and_no_ceiling():
    d = curves.curve(NEGATIVE_BASE)
    assert curves.fit_line([1.0, 2.0, 4.0, 8.0], [0.010, 0.004, 0.020, 0.060])[0] < 0
    assert d.fit is None and d.ceiling is None and d.c_at_slo is None
    assert "base came out negative over c = 1, 2, 4, 8" in d.fit_note and "not used" in d.fit_note


def test_summarise_says_why_a_negative_base_is_not_used(tmp_path, capsys):
    book = write_book(tmp_path / "neg.md", list(NEGATIVE_BASE.values()))
    assert main(["summarise", "--labbook", str(book), "--label", "x", "--record"]) == 0
    out = capsys.readouterr().out
    assert "TPOT fit: the fit's base came out negative" in out
    assert "TPOT p50 fit:" not in out and "ceiling:" not in out and "ceiling at" not in out
    summary = json.loads(book.read_text().strip().splitlines()[-1])
    assert summary["record"] == "curve-summary" and summary["tpot_fit_ms"] is None
    assert summary["ceiling_tokens_per_s"] is None and "seat_ceiling_tokens_per_s" not in summary


def test_without_the_labs_sweeps_required_their_absence_is_no_finding():
    """A plan that is not the serving lab (Day 3): no baseline and no prefix pair is not a FAIL; the
    curves it has are still held to every other rule."""
    crowd = curves.by_label([level(c, 10, 0.02 + 0.001 * c, label="day3-real") for c in (1, 2, 4, 8, 16)])
    required = curves.check(crowd)
    assert any(v == "FAIL" and t.startswith("baseline sweep") for v, t in required)
    assert any(v == "FAIL" and t.startswith("prefix pair") for v, t in required)
    relaxed = curves.check(crowd, lab_sweeps=False)
    assert not [t for _, t in relaxed if t.startswith(("baseline sweep", "prefix pair"))]
    assert [f for f in required if not f[1].startswith(("baseline sweep", "prefix pair"))] == relaxed
