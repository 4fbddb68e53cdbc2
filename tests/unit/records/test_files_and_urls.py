"""Files, names, ports and URLs (reliability round two, classes 2, 5 and 6): a FIFO notebook refused in one
line, absurd numbers and lone surrogates never a traceback, labels made safe as file names,
ports range-checked, a base URL's password or query string refused, the key warned about."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli.dispatch import main
from harness.records.labels import MAX_NAME, file_label
from harness.errors import ConfigError, SchemaError
from harness.endpoints.http_client import check_base_url
from harness.engines.metrics_sampler import parse_metrics
from harness.records.notebook import append_record, check_writable, read_records
from harness.engines.ports import is_port, port_open
from harness.run.preflight_checks import port_free


def _bounded(function, seconds: float = 5.0):
    """Run ``function`` on a thread; fail (not hang) when it has not returned in ``seconds``."""
    out: dict = {}

    def go():
        try:
            out["value"] = function()
        except BaseException as exc:  # noqa: BLE001  (handed back to the test)
            out["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "it hung"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_fifo_notebook_is_refused_in_one_line_not_a_hang(tmp_path):
    fifo = tmp_path / "book.md"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="a FIFO, not a regular file"):
        _bounded(lambda: check_writable(fifo))
    with pytest.raises(SchemaError, match="a FIFO"):
        _bounded(lambda: append_record(fifo, LEVEL, "level"))
    with pytest.raises(SchemaError, match="a FIFO"):
        _bounded(lambda: read_records(fifo, "level"))


def test_a_fifo_labbook_makes_the_sweep_exit_2_at_once(tmp_path, capsys):
    fifo = tmp_path / "book.md"
    os.mkfifo(fifo)
    argv = ["sweep", "--base-url", "http://127.0.0.1:18299/v1", "--model", "m", "--labbook", str(fifo)]
    assert _bounded(lambda: main(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert "FIFO" in err and "\n" not in err


ROOT = Path(__file__).resolve().parents[3]
LEVEL = next(
    json.loads(line)
    for line in (ROOT / "tests/fixtures/notebooks/practice-run.md").read_text().splitlines()
    if '"output_tokens_per_s"' in line
)


def test_a_number_past_1e15_in_a_notebook_is_a_warning_not_a_traceback(tmp_path):
    rec = json.loads(json.dumps(LEVEL))
    rec["output_tokens_per_s"] = 1e308
    book = tmp_path / "book.md"
    book.write_text(json.dumps(LEVEL) + "\n" + json.dumps(rec) + "\n")
    got = read_records(book, "level")
    assert len(got.records) == 1 and "past 1e15" in got.warnings[0]


def test_a_nan_in_a_notebook_is_named_as_nan_not_as_a_number_past_1e15(tmp_path):
    text = json.dumps(LEVEL).replace('"output_tokens_per_s": ', '"output_tokens_per_s": NaN, "x": ', 1)
    book = tmp_path / "book.md"
    book.write_text(json.dumps(LEVEL) + "\n" + text + "\n")
    got = read_records(book, "level")
    assert len(got.records) == 1 and "output_tokens_per_s (NaN, no number)" in got.warnings[0], got.warnings


def test_summarise_reads_a_notebook_with_1e308_without_a_traceback(tmp_path, capsys):
    rec = json.loads(json.dumps(LEVEL))
    rec["ttft_s"]["p95"] = 1e308
    book = tmp_path / "book.md"
    book.write_text(json.dumps(LEVEL) + "\n" + json.dumps(rec) + "\n")
    assert main(["summarise", "--labbook", str(book), "--label", LEVEL["label"]]) in (0, 1)
    assert "past 1e15" in capsys.readouterr().err


def test_a_lone_surrogate_in_a_record_is_written_and_read_back(tmp_path):
    rec = json.loads(json.dumps(LEVEL))
    rec["first_error"] = json.loads('"HTTP 500: \\ud800 broken"')
    book = tmp_path / "book.md"
    append_record(book, rec, "level")  # no UnicodeEncodeError
    (back,) = read_records(book, "level").records
    assert back["first_error"].startswith("HTTP 500")


@pytest.mark.parametrize(
    "label", ["../../../ESCAPED", "/etc/passwd", "..", ".", "", "a/b", "a\\b", "x\x00y", "é ü", "-rf"]
)
def test_a_label_becomes_a_file_name_inside_its_folder(tmp_path, label):
    name = file_label(label)
    path = (tmp_path / "charts" / f"{name}-tpot.png").resolve()
    assert path.parent == (tmp_path / "charts").resolve()
    assert name and not name.startswith((".", "-")) and "/" not in name and "\\" not in name


def test_the_summarise_step_of_a_hostile_label_writes_inside_the_run_directory(tmp_path):
    from harness.run.steps import Where, _summarise

    where = Where(plan=None, run_dir=tmp_path, notebook=str(tmp_path / "labbook.md"))  # type: ignore[arg-type]
    (step,) = _summarise(where, {"labels": ["../../../ESCAPED"]})
    chart = Path(dict(step.options)["tpot_chart"])
    assert chart.resolve().parent == (tmp_path / "charts").resolve()
    assert dict(step.options)["label"] == "../../../ESCAPED"  # the label itself is kept as given


@given(st.text(max_size=300))
def test_file_label_is_always_a_safe_bounded_name(label):
    name = file_label(label)
    assert name and len(name) <= MAX_NAME  # the hash included (it made names of up to 89)
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
    assert not name.startswith((".", "-")) and ".." not in name
    assert name.split(".")[0].lower() not in WINDOWS_DEVICES


WINDOWS_DEVICES = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}


@pytest.mark.parametrize("label", ["con", "NUL", "nul.txt", "Com1", "lpt9.x.y", "aux"])
def test_a_windows_device_name_is_never_a_file_name(label):
    name = file_label(label)
    assert name.split(".")[0].lower() not in WINDOWS_DEVICES and name != label, name
    assert file_label("console") == "console"  # only the device names themselves


@given(st.text(max_size=60), st.text(max_size=60))
def test_different_labels_never_share_a_file_name(a, b):
    if a != b:
        assert file_label(a) != file_label(b)


def test_a_safe_label_keeps_its_name():
    assert file_label("llama-cpu-mixed_c8.v2") == "llama-cpu-mixed_c8.v2"


@pytest.mark.parametrize("port", [0, -1, 65536, 99_999_999, True, "80"])
def test_ports_out_of_range_are_never_free(port):
    assert not is_port(port)
    assert port_free("127.0.0.1", port).level == "FAIL"
    with pytest.raises(ConfigError):
        port_open("127.0.0.1", port)


def test_practice_refuses_a_port_out_of_range(capsys):
    assert main(["practice", "--port", "99999999"]) == 2
    assert "--port takes a whole number from 0 to 65535" in capsys.readouterr().err


def test_a_password_in_the_base_url_is_refused_and_never_repeated(capsys):
    url = "http://alice:hunter2-secret@127.0.0.1:18299/v1"
    with pytest.raises(ConfigError) as err:
        check_base_url(url)
    assert "hunter2-secret" not in str(err.value) and "alice" not in str(err.value)
    assert "--api-key-env" in str(err.value)
    assert main(["sweep", "--base-url", url, "--model", "m"]) == 2
    out = capsys.readouterr()
    assert "hunter2-secret" not in out.out + out.err and "user name or password" in out.err


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1?api-version=2", "http://h:1/v1#x", "http://h:1/v1?"]
)
def test_a_query_string_in_the_base_url_is_refused_not_dropped(url):
    with pytest.raises(ConfigError, match="query string"):
        check_base_url(url)


def test_a_plain_base_url_passes():
    check_base_url("https://127.0.0.1:8443/v1")


def test_an_api_key_on_the_command_line_is_warned_about_and_never_echoed(capsys):
    key = "sk-on-the-command-line-42"
    main(
        [
            "probe",
            "--engine",
            "x",
            "--model",
            "m",
            "--api-key",
            key,
            "--base-url",
            "http://127.0.0.1:18299/v1",
        ]
    )
    err = capsys.readouterr().err
    assert "--api-key-env" in err and "`ps`" in err and key not in err


def test_nan_and_inf_in_metrics_are_skipped():
    text = (
        "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing NaN\n"
        "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred +Inf\n"
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"
    )
    assert parse_metrics(text) == {"vllm:num_requests_running": 3.0}


def test_a_symlinked_notebook_or_samples_file_is_refused_and_never_written_through(tmp_path, capsys):
    """Reliability round two, second sweep: --labbook and --samples given a symbolic link wrote the records
    wherever it pointed. A link (even one to a file not yet there) is refused in one line before
    anything is measured, and a writer never follows one, even one put there after the check."""
    import harness.records.notebook as notebook

    outside = tmp_path / "elsewhere" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("keep me\n")
    link, dangling = tmp_path / "book.md", tmp_path / "samples.jsonl"
    link.symlink_to(outside)
    dangling.symlink_to(tmp_path / "elsewhere" / "new-file")
    for path, flag in ((link, "--labbook"), (dangling, "--samples")):
        with pytest.raises(ConfigError, match="is a symbolic link .*give the file's own path"):
            check_writable(path, flag)
        with pytest.raises(SchemaError, match="symbolic link"):
            append_record(path, LEVEL, "level")
    argv = ["sweep", "--base-url", "http://127.0.0.1:18299/v1", "--model", "m", "--labbook", str(link)]
    assert _bounded(lambda: main(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "symbolic link" in err[0], err
    argv = [*argv[:-1], str(tmp_path / "real.md"), "--samples", str(dangling)]
    assert _bounded(lambda: main(argv)) == 2
    assert "--samples" in capsys.readouterr().err
    real = tmp_path / "real.md"
    real.write_text("")
    with pytest.MonkeyPatch.context() as mp:  # a link swapped in after the check: O_NOFOLLOW
        mp.setattr(notebook, "special_file", lambda path, follow=False: None)
        with pytest.raises(SchemaError, match="symbolic link"):
            append_record(link, LEVEL, "level")
    assert outside.read_text() == "keep me\n" and not (tmp_path / "elsewhere" / "new-file").exists()
    append_record(real, LEVEL, "level")  # reading through a link is harmless, and allowed
    reader = tmp_path / "reader.md"
    reader.symlink_to(real)
    assert len(read_records(reader, "level").records) == 1
