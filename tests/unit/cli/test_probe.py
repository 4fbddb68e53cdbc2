"""`harness probe` when nothing answers: one line, and nothing recorded."""

from harness.cli import main


def test_server_down_is_one_line(tmp_path, capsys):
    assert (
        main(
            [
                "probe",
                "--engine",
                "x",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--labbook",
                str(tmp_path / "b.md"),
            ]
        )
        == 2
    )
    assert "nothing answers at" in capsys.readouterr().err
    assert not (tmp_path / "b.md").exists()
