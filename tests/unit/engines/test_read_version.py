"""The runner reads an engine build's version once per run (``vllm --version`` takes seconds),
and again for a new build or after a reading that said "unknown"."""

from __future__ import annotations

import os

from harness.engines.launchers.base import binary_key, read_version
from harness.engines.launchers.host import HostLauncher


class Counting:
    """A launcher that knows its build's key and counts how often its version is asked."""

    def __init__(self, key, answers):
        self.key, self.answers, self.asked = key, list(answers), 0

    def version_key(self):
        return self.key

    def version(self):
        self.asked += 1
        return self.answers.pop(0)


def test_a_second_start_of_the_same_build_is_not_asked_again():
    seen: dict = {}
    first, second = Counting(("img", "sha1"), ["0.32.0"]), Counting(("img", "sha1"), ["never read"])
    assert read_version(first, seen) == "0.32.0"
    assert read_version(second, seen) == "0.32.0"
    assert (first.asked, second.asked) == (1, 0)


def test_another_build_and_an_unknown_reading_are_asked():
    seen: dict = {}
    assert read_version(Counting(("a",), ["unknown (vllm --version exited with status 1)"]), seen).startswith(
        "unknown"
    )
    again = Counting(("a",), ["0.32.0"])
    assert read_version(again, seen) == "0.32.0" and again.asked == 1
    other = Counting(("b",), ["0.33.0"])
    assert read_version(other, seen) == "0.33.0" and other.asked == 1


def test_a_launcher_without_a_key_is_asked_every_time():
    seen: dict = {}
    for _ in range(2):
        launcher = Counting(None, ["1"])
        read_version(launcher, seen)
        assert launcher.asked == 1
    assert seen == {}


def test_the_host_launchers_key_changes_when_the_binary_is_rebuilt(tmp_path):
    exe = tmp_path / "engine"
    exe.write_text("#!/bin/sh\necho version: 1\n")
    exe.chmod(0o755)
    launcher = HostLauncher(
        argv=[str(exe)],
        host="127.0.0.1",
        port=1,
        health_url="http://127.0.0.1:1/health",
        log_path=tmp_path / "log",
        version_argv=[str(exe), "--version"],
    )
    key = launcher.version_key()
    assert key == binary_key([str(exe), "--version"]) and key is not None
    seen: dict = {}
    assert read_version(launcher, seen) == "version: 1"
    exe.write_text("#!/bin/sh\necho version: 2\n")
    os.utime(exe, ns=(1, 1))  # a reinstall: another size or mtime
    assert launcher.version_key() != key
    assert read_version(launcher, seen) == "version: 2"


def test_a_missing_binary_has_no_key():
    assert binary_key(["/nonexistent/engine", "--version"]) is None
    assert binary_key(None) is None
