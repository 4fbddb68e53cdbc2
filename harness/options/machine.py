"""What the machine part of a record may say beyond the probe: the engine's log, whose devices it
names (a Vulkan or CUDA device the machine's own tools cannot see), and the host name, left out
unless asked for."""

from __future__ import annotations

from harness.options import Option

ENGINE_LOG = Option(
    "engine-log",
    help="the engine's log: the accelerators it names (Vulkan0: NAME) go in each record's machine part",
    metavar="PATH",
)
RECORD_HOST_NAME = Option(
    "record-host-name",
    bool,
    False,
    "write this machine's host name in each record's machine part (left out unless asked)",
)
