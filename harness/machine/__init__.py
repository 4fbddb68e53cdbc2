"""The machine a record was written on, read from the machine itself.

readers   pure readers of nvidia-smi, rocm-smi, amd-smi, lscpu, sysctl, docker ps, engine logs
part      the record's ``machine`` part from those outputs, a reason beside every null
probe     runs the tools once per process; the notebook writer calls ``probe.part_for``
"""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

__all__ = ["part", "probe", "readers"]
