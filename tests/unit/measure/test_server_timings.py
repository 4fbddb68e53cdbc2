"""llama-server's own timings set against the client's (engines lab, Task 3: they
"should agree with the client-side prefill and decode figures to within a few per cent; a large
disagreement means the client is timing something other than generation")."""

from __future__ import annotations

import json

from harness.measure import server_timings as st
from harness.records.engine import EngineSpeed
from tests.conftest import FIXTURES, fake_measurement

LONG = {
    "test": "long",
    "prefill_tokens_per_s": 2363.4,
    "server_prefill_tokens_per_s": 2299.1,
    "decode_tokens_per_s": 54.2,
    "server_decode_tokens_per_s": 55.5,
}


def _compare(rec: dict):
    return st.compare(EngineSpeed.read(rec))


def test_rates_within_a_few_per_cent_agree():
    check = _compare(LONG)
    assert check is not None and check.to_dict() == {
        "prefill_gap": 0.028,
        "decode_gap": -0.0234,
        "within": 0.05,
        "agree": True,
        "finding": None,
    }
    assert st.of({**LONG, "server_timings_check": check.to_dict()}) == check == st.of(LONG)
    assert st.words(check) == (
        "client against the server's own timings: prefill +2.8%, decode -2.3%, within 5%: they agree"
    )


def test_a_large_disagreement_is_named():
    check = _compare({**LONG, "decode_tokens_per_s": 38.6})
    assert check is not None and check.agree is False
    assert check.finding == (
        "client and server timings disagree: decode 38.6 tok/s against the server's 55.5 (-30.5%): "
        + st.DISAGREE
    )


def test_no_timings_block_no_comparison():
    assert _compare({"test": "long", "prefill_tokens_per_s": 100.0, "decode_tokens_per_s": 20.0}) is None


def test_engines_check_and_tables_name_the_disagreement(capsys):
    """The fixture's llama.cpp decoded 38.6 tok/s on the long test where its server said 55.48."""
    from harness.cli import main

    book = FIXTURES / "notebooks" / "engines-spark.md"
    main(["engines", "--labbook", str(book), "--machine", "spark"])
    out = capsys.readouterr().out
    assert "Server timings against the client's" in out
    assert "client and server timings disagree: decode 38.6 tok/s against the server's 55.5 (-30.4%)" in out


def test_measure_records_the_comparison_on_the_long_test(tmp_path, monkeypatch, capsys):
    from harness.cli import main

    fake_measurement(monkeypatch, server_prefill=2300.0, server_decode=55.5)
    book = tmp_path / "labbook.md"
    argv = ["measure", "--engine", "llama.cpp", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*argv, "--backend", "CUDA", "--quant", "Q4_K_M", "--labbook", str(book)]) == 0
    recs = [json.loads(line) for line in book.read_text().splitlines() if line.startswith("{")]
    long = next(r for r in recs if r["test"] == "long")
    short = next(r for r in recs if r["test"] == "short")
    # prefill from the difference: 1404 tokens / 0.6 s = 2340.0 against the server's 2300.0
    assert long["server_timings_check"]["prefill_gap"] == round(2340.0 / 2300.0 - 1, 4)
    assert long["server_timings_check"]["agree"] is True
    assert "server_timings_check" not in short
    assert "within 5%: they agree" in capsys.readouterr().out
