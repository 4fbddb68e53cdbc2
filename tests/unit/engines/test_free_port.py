"""free_port picks a port no outgoing connection can take in the meantime, and one nothing holds."""

from __future__ import annotations

import socket

from harness.engines import ports


def test_the_port_is_below_the_kernels_ephemeral_range_and_can_be_listened_on():
    low, high = ports.ephemeral_range()
    assert 0 < low <= high <= 65535
    for _ in range(20):
        port = ports.free_port()
        assert ports.LOWEST <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()


def offer_first(monkeypatch, port: int) -> None:
    """free_port's first candidate is ``port``, the rest above it (room above the ephemeral range)."""
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (65000, 65535))
    monkeypatch.setattr(ports, "LOWEST", port)
    monkeypatch.setattr(ports.random, "sample", lambda population, k: [port, *population[1:k]])


def test_a_port_held_by_a_listener_is_passed_over(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        offer_first(monkeypatch, taken)
        assert ports.free_port() not in (taken, 0)


def test_a_port_in_time_wait_is_passed_over(monkeypatch):
    # The server side of a connection the server closed first keeps its port in TIME_WAIT: a bind
    # without SO_REUSEADDR (as some engines do) would fail there.
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = srv.accept()
        conn.close()  # the server closes first: its end goes to TIME_WAIT
        client.recv(1)
        client.close()
    offer_first(monkeypatch, port)
    assert ports.free_port() != port


def test_no_room_below_the_range_falls_back_to_the_kernels_pick(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (ports.LOWEST + 10, 65535))
    port = ports.free_port()
    assert 0 < port <= 65535
