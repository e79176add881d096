"""Per-connection network counters of this process, from Linux `/proc` and `TCP_INFO`.

Sockets are this process's file descriptors that link to `socket:[inode]`; `/proc/self/net/*`
maps inodes to addresses, state and queue sizes. For TCP, byte and segment counters come from
`getsockopt(TCP_INFO)` on a duplicate of the descriptor (closing the duplicate leaves the
application's socket untouched). Interface totals come from `/proc/self/net/dev`.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

from project_mcp_server.config import ServerConfig

PROC = Path("/proc/self")
_TCP_STATES = {
    1: "ESTABLISHED",
    2: "SYN_SENT",
    3: "SYN_RECV",
    4: "FIN_WAIT1",
    5: "FIN_WAIT2",
    6: "TIME_WAIT",
    7: "CLOSE",
    8: "CLOSE_WAIT",
    9: "LAST_ACK",
    10: "LISTEN",
    11: "CLOSING",
}
# struct tcp_info (linux/tcp.h): bytes_acked @120, bytes_received @128 (u64), segs_out/segs_in @136 (u32).
_TCP_INFO_LEN = 144
TOP = 50


def rss_kib() -> int | None:
    """Resident set size of this process in KiB (VmRSS), if /proc is there."""
    try:
        for line in (PROC / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _address(hex_address: str) -> str:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return f"{socket.inet_ntop(family, words)}:{int(port, 16)}"


def _socket_fds() -> dict[int, int]:
    """inode -> fd for every socket this process holds."""
    found: dict[int, int] = {}
    for name in os.listdir(PROC / "fd"):
        try:
            target = os.readlink(PROC / "fd" / name)
        except OSError:
            continue  # closed in the meantime
        if target.startswith("socket:["):
            found[int(target[8:-1])] = int(name)
    return found


def _tcp_counters(fd: int) -> dict[str, int] | None:
    try:
        with socket.socket(fileno=os.dup(fd)) as dup:
            info = dup.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None
    if len(info) < _TCP_INFO_LEN:
        return None
    sent, received = struct.unpack_from("=QQ", info, 120)
    segs_out, segs_in = struct.unpack_from("=II", info, 136)
    return {"bytes_sent": sent, "bytes_received": received, "segments_out": segs_out, "segments_in": segs_in}


def connections() -> dict[int, dict[str, Any]]:
    """inode -> connection facts for this process's TCP and UDP sockets."""
    fds = _socket_fds()
    found: dict[int, dict[str, Any]] = {}
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = (PROC / "net" / proto).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            inode = int(fields[9])
            if inode not in fds:
                continue
            tx_queue, rx_queue = (int(x, 16) for x in fields[4].split(":"))
            state = int(fields[3], 16)
            conn = {
                "protocol": proto,
                "local": _address(fields[1]),
                "remote": _address(fields[2]),
                "state": _TCP_STATES.get(state, str(state)) if proto.startswith("tcp") else "",
                "tx_queue": tx_queue,
                "rx_queue": rx_queue,
            }
            counters = _tcp_counters(fds[inode]) if proto.startswith("tcp") else None
            found[inode] = {**conn, **(counters or {})}
    return found


def _interfaces() -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    try:
        lines = (PROC / "net" / "dev").read_text().splitlines()[2:]
    except OSError:
        return found
    for line in lines:
        name, _, data = line.partition(":")
        values = data.split()
        found[name.strip()] = (int(values[0]), int(values[8]))
    return found


def network(config: ServerConfig, seconds: float) -> dict[str, Any]:
    """Connections open, opened and closed during the window, with the bytes each moved."""
    before, if_before = connections(), _interfaces()
    time.sleep(seconds)
    after, if_after = connections(), _interfaces()
    report = []
    for inode, conn in after.items():
        old = before.get(inode, {})
        delta = {f"{k}_delta": conn[k] - old.get(k, 0) for k in ("bytes_sent", "bytes_received") if k in conn}
        report.append({**conn, **delta, "status": "open" if old else "opened"})
    report += [{**conn, "status": "closed"} for inode, conn in before.items() if inode not in after]
    report.sort(key=lambda c: -(c.get("bytes_sent_delta", 0) + c.get("bytes_received_delta", 0)))
    interfaces = {
        name: {
            "rx_bytes_delta": rx - if_before.get(name, (rx, tx))[0],
            "tx_bytes_delta": tx - if_before.get(name, (rx, tx))[1],
        }
        for name, (rx, tx) in if_after.items()
    }
    return {
        "type": "network",
        "connections": report[:TOP],
        "connection_count": len(report),
        "interfaces": {k: v for k, v in interfaces.items() if v["rx_bytes_delta"] or v["tx_bytes_delta"]},
    }
