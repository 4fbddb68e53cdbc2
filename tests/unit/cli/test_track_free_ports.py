"""`harness track`'s free ports: a plan variable whose value is `free` gets a port nobody holds."""

from __future__ import annotations

import socket

from harness.run.plan_variables import free_ports


def test_the_practice_plan_gets_a_free_port_and_set_wins():
    chosen = free_ports("practice", {})
    assert list(chosen) == ["PRACTICE_PORT"]
    port = int(chosen["PRACTICE_PORT"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it
    assert free_ports("practice", {"PRACTICE_PORT": "8099"}) == {}


def test_a_plan_with_fixed_ports_is_left_alone():
    assert free_ports("cpu", {}) == {}
