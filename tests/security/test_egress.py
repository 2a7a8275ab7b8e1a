"""1. Egress: name lookups, TCP and UDP to a listener on the host's loopback, the interfaces
and routes a sandbox has. Every attempt is aimed at a loopback address only."""

from __future__ import annotations

import json

import pytest

from tests.security.conftest import MAIN_REFUSED, MainRun

pytestmark = pytest.mark.integration

REFUSALS = {"ECONNREFUSED", "EADDRNOTAVAIL", "ENETUNREACH", "EHOSTUNREACH", "ETIMEDOUT",
            "TimeoutError"}


def test_nothing_any_sandbox_sends_reaches_the_hosts_loopback(main_run: MainRun) -> None:
    assert main_run.meta["status"] == "refused-arms"
    assert {a for a, i in main_run.meta["arms"].items() if i.get("refused")} == MAIN_REFUSED
    assert main_run.world.listener.arrived == []


def test_lookups_and_connects_to_loopback_all_fail_and_are_recorded(main_run: MainRun) -> None:
    tried = main_run.attempts("h-net", 0)
    port = main_run.world.listener.port
    network = {k: v for k, v in tried.items()
               if k.startswith(("dns-", "tcp ", "udp-roundtrip "))}
    assert f"tcp 127.0.0.1:{port}" in network and f"dns-udp host-canary 127.0.0.1:{port}" in network
    for what, (result, detail) in network.items():
        assert result in REFUSALS, (what, result, detail)
    # A datagram "sent" only lands in the sandbox's own loopback: the listener saw nothing
    # (test above), and a connected socket is told the port is closed.
    assert tried[f"udp-roundtrip 127.0.0.1:{port}"][0] == "ECONNREFUSED"
    if main_run.world.listener.port6:
        assert tried[f"tcp [::1]:{main_run.world.listener.port6}"][0] in REFUSALS
    # Only /etc/hosts answers: localhost, nothing else.
    assert tried["getaddrinfo localhost (files only)"][0] == "OK"
    again = main_run.attempts("h-net", 1)
    (loop,) = [v for k, v in again.items() if k.endswith("for 1 s")]
    assert loop[0] == "REFUSED" and "ECONNREFUSED=" in loop[1]


def test_the_sandbox_has_only_lo_and_no_route_off_it(main_run: MainRun) -> None:
    tried = main_run.attempts("h-net", 0)
    assert tried["interfaces"] == ("LIST", "lo")
    result, links = tried["ip -o link"]
    assert result == "OK" and links.startswith("1: lo:") and "2:" not in links
    for table in ("ip -4 route show table all", "ip -6 route show table all"):
        result, routes = tried[table]
        assert result == "OK"
        for route in filter(None, routes.split("\\n")):
            assert " dev lo " in route + " ", (table, route)
    assert tried["read /proc/net/route"][1].split("\t")[0] == "Iface"  # the header alone
    assert "\\n" not in tried["read /proc/net/route"][1]
    for line in filter(None, tried["read /proc/net/ipv6_route"][1].split(" | ")):
        assert line.split()[-1] == "lo", line
    for change in ("ip link add dummy0 type dummy", "ip route add default dev lo",
                   "ip link set lo down"):
        result, detail = tried[change]
        assert result != "OK" and "Operation not permitted" in detail, (change, detail)


def test_the_guard_probe_of_every_hostile_arm_saw_no_way_out(main_run: MainRun) -> None:
    for folder in sorted((main_run.run_dir / "guards").iterdir()):
        if folder.name == "h-volume":
            continue  # refused from outside before any probe (test_neighbours)
        verdict = {r["guard"]: r for r in json.loads((folder / "verdict.json").read_text())}
        for guard in ("interfaces", "routes", "name_lookup", "loopback_tcp", "loopback_udp"):
            assert verdict[guard]["ok"], (folder.name, verdict[guard])
