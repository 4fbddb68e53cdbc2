"""How long a test waits on a process it starts.

A wall time that includes a process's start measures the machine as much as the process: on a
loaded 2-core CI machine, Python, the harness's imports, Locust's import and gevent's patching took
23.7 s once for a whole sweep whose own checks end within 4 s. So no test asserts such a time to
prove a behaviour (what the command wrote or said proves it); a deadline on a started process
only catches a hang, and allows ``START_S`` for the start on top of what the command itself may
take. The failures those deadlines catch are made to take far longer than the deadline (a fake
server that holds its answer for ten minutes, a stall of ten minutes), so neither side comes near.
"""

from __future__ import annotations

# A process's start on a loaded 2-core machine: five times the 23.7 s CI once measured.
START_S = 120.0
