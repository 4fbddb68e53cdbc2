"""The machine table: it validates, lookups name what is missing, and the copy bandwidth is measured."""

from __future__ import annotations

import pytest
import yaml

from harness.errors import ConfigError, SchemaError
from harness.sizing import machines


def test_shipped_table_validates_and_holds_the_labs_machines():
    table = machines.load_machines()
    assert {"m4-max", "spark", "rtx-4090"} <= set(table)
    assert machines.lookup("m4-max")["bandwidth_gb_s"] == 546  # as `harness check` prints it


def test_unknown_machine_names_the_table_and_the_choices():
    with pytest.raises(ConfigError, match="machine 'cray-1' is not in .*machines.yaml; use one of .*m4-max"):
        machines.lookup("cray-1")


def test_a_private_table_is_read_and_checked(tmp_path):
    shipped = yaml.safe_load(machines.TABLE.read_text())
    one = next(iter(shipped["machines"].values()))
    path = tmp_path / "machines.yaml"
    path.write_text(yaml.safe_dump({**shipped, "machines": {"mine": one}}))
    assert machines.lookup("mine", path) == one
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({**shipped, "machines": {"mine": {**one, "bandwidth_gb_s": "fast"}}}))
    with pytest.raises(SchemaError):
        machines.load_machines(broken)


def test_copy_bandwidth_is_a_plausible_positive_figure():
    gbs = machines.measure_copy_bandwidth(size_mib=16, repeats=2)
    assert 0.1 < gbs < 10_000
