"""An engine's environment kept between clones (``--env-cache``): packed once it works, unpacked in a
fresh clone's folder with its scripts pointed there, and never half-unpacked. Run on a small real
virtual environment (no pip inside, so it builds in a fraction of a second)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.engines.own_env import OwnEnv, relocate

TINY = OwnEnv("Tiny", "tiny", "TINY_VENV", ".venv-tiny", (sys.version_info[:2],))


def make_env(folder: Path) -> None:
    """A virtual environment with one console script, as pip writes them (a shebang naming the folder)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder], check=True)
    script = folder / "bin" / "hello"
    script.write_text(f"#!{folder}/bin/python\nimport sys\nprint(sys.prefix)\n")
    script.chmod(0o755)


def test_kept_then_restored_in_another_clone_runs_from_there(tmp_path, monkeypatch):
    first = tmp_path / "clone-a" / ".venv-tiny"
    monkeypatch.setenv("TINY_VENV", str(first))
    make_env(first)
    archive = TINY.archive(tmp_path / "cache", ["pin 1", "steps"])
    said: list[str] = []
    TINY.keep(archive, said.append)
    assert archive.is_file() and said[-1].startswith(f"    kept in {archive} for the next clone")
    assert json.loads(archive.with_suffix(".json").read_text()) == {"directory": str(first)}
    TINY.keep(archive, said.append)
    assert len(said) == 1, "an archive already kept is not packed again"

    second = tmp_path / "clone-b" / ".venv-tiny"
    monkeypatch.setenv("TINY_VENV", str(second))
    assert TINY.restore(archive, said.append)
    assert said[-1].startswith(f"==> {second} restored from {archive} in ")
    out = subprocess.run([second / "bin" / "hello"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(second)
    assert str(first) not in (second / "pyvenv.cfg").read_text()
    assert not second.with_name(".venv-tiny.partial").exists()
    assert not TINY.restore(archive, said.append), "a folder already there is left as it is"


def test_other_facts_are_another_archive_and_replace_the_old_one(tmp_path, monkeypatch):
    folder = tmp_path / ".venv-tiny"
    monkeypatch.setenv("TINY_VENV", str(folder))
    make_env(folder)
    old = TINY.archive(tmp_path / "cache", ["pin 1"])
    new = TINY.archive(tmp_path / "cache", ["pin 2"])
    assert old != new and old.parent == new.parent
    TINY.keep(old, print)
    TINY.keep(new, print)
    assert new.is_file() and not old.exists() and not old.with_suffix(".json").exists()


def test_a_broken_archive_leaves_no_folder_and_says_why(tmp_path, monkeypatch):
    archive = tmp_path / "cache" / "venv-tiny-000000000000.tar"
    archive.parent.mkdir()
    archive.write_bytes(b"not a tar file")
    archive.with_suffix(".json").write_text('{"directory": "/elsewhere/.venv-tiny"}\n')
    folder = tmp_path / ".venv-tiny"
    monkeypatch.setenv("TINY_VENV", str(folder))
    said: list[str] = []
    assert not TINY.restore(archive, said.append)
    assert not folder.exists() and not folder.with_name(".venv-tiny.partial").exists()
    assert len(said) == 1
    assert said[0].startswith(f"    not restored from {archive} (unpacking {archive} failed")
    assert said[0].endswith("; installing instead")


def test_relocate_rewrites_text_and_leaves_links_and_binaries(tmp_path):
    folder = tmp_path / "env"
    (folder / "bin").mkdir(parents=True)
    old, new = "/old/place/.venv", "/a/much/longer/new/place/.venv"
    (folder / "bin" / "tool").write_text(f"#!{old}/bin/python\n")
    (folder / "bin" / "activate").write_text(f'VIRTUAL_ENV="{old}"\n')
    binary = f"\x7fELF\0{old}\0".encode()
    (folder / "bin" / "native").write_bytes(binary)
    (folder / "bin" / "python").symlink_to(f"{old}/bin/python3")
    (folder / "pyvenv.cfg").write_text(f"home = /usr/bin\ncommand = /usr/bin/python3 -m venv {old}\n")
    assert relocate(folder, old, new) == 3
    assert (folder / "bin" / "tool").read_text() == f"#!{new}/bin/python\n"
    assert (folder / "bin" / "activate").read_text() == f'VIRTUAL_ENV="{new}"\n'
    assert (folder / "bin" / "native").read_bytes() == binary
    assert str((folder / "bin" / "python").readlink()) == f"{old}/bin/python3"
    assert new in (folder / "pyvenv.cfg").read_text()
