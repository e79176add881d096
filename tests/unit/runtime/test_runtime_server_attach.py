"""The pure parts of AttachServer: demultiplexing the engine's attach stream, chunking output, checking input."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.common.errors import InvalidArgument
from jarvis.runtime import convert
from jarvis.runtime.adapters.exec_stream import FrameReader
from jarvis.runtime.adapters.processes import DockerAttachedStream
from jarvis.runtime.domain.models import ServerLaunch, ServerOutput
from jarvis.runtime.domain.servers import _merged, check_launch


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def test_frames_split_across_reads_come_out_whole_and_by_stream() -> None:
    ours, engine = socket.socketpair()
    wire = frame(1, b'{"jsonrpc":') + frame(2, b"warming up\n") + frame(1, b'"2.0"}\n')
    initial, rest = wire[:5], wire[5:]  # bytes that arrived with the HTTP upgrade response, then the rest
    engine.sendall(rest[:3])
    engine.sendall(rest[3:])
    engine.close()
    stream = DockerAttachedStream(ours, FrameReader(ours, initial))
    received = [f for batch in stream.chunks() for f in batch]
    assert received == [("stdout", b'{"jsonrpc":'), ("stderr", b"warming up\n"), ("stdout", b'"2.0"}\n')]


def test_close_from_another_thread_ends_the_reading() -> None:
    ours, engine = socket.socketpair()
    stream = DockerAttachedStream(ours, FrameReader(ours))
    received: list[list[tuple[str, bytes]]] = []
    reader = threading.Thread(target=lambda: received.extend(stream.chunks()))
    reader.start()
    engine.sendall(frame(1, b"first\n"))
    time.sleep(0.2)
    stream.close()  # as a cancelled call does: the reader, blocked on the socket, sees the end
    reader.join(5)
    assert not reader.is_alive()
    assert received == [[("stdout", b"first\n")]]
    with pytest.raises(BrokenPipeError, match="input is closed"):
        stream.write(b"late\n")
    engine.close()


def test_a_reader_whose_socket_is_closed_under_it_ends_even_if_the_descriptor_is_reused() -> None:
    """The race behind a hang seen once in CI: another thread closes the socket while the reader waits, and
    the descriptor number goes to a new, idle socket (an engine call). The reader must end all the same."""
    ours, engine = socket.socketpair()
    reader = FrameReader(ours)
    got: list[list[tuple[str, bytes]]] = []
    waiting = threading.Thread(target=lambda: got.append(reader.frames()), daemon=True)
    waiting.start()
    time.sleep(0.2)  # the reader now waits in select() on the descriptor
    number = ours.fileno()
    ours.close()  # no shutdown: nothing wakes the waiting select()
    reused, idle_peer = socket.socketpair()  # likely takes the freed number, and never becomes readable
    waiting.join(5)
    assert not waiting.is_alive(), f"the reader still waits (descriptor {number} reused: {reused.fileno() == number})"
    assert got == [[]]
    assert reader.eof
    for sock in (reused, idle_peer, engine):
        sock.close()


def test_consecutive_frames_of_one_stream_become_one_chunk() -> None:
    frames = [("stdout", b"a"), ("stdout", b"b"), ("stderr", b"c"), ("stdout", b"d")]
    assert list(_merged(frames)) == [
        ServerOutput("stdout", b"ab"),
        ServerOutput("stderr", b"c"),
        ServerOutput("stdout", b"d"),
    ]


@pytest.mark.parametrize(
    ("launch", "message"),
    [
        (ServerLaunch("box", ""), "image is required"),
        (ServerLaunch("box", "Bad/Image"), "invalid image reference"),
        (ServerLaunch("-box", "img:1"), "invalid server name"),
        (ServerLaunch("box", "img:1", env={"A-B": "x"}), "invalid environment variable name 'A-B'"),
        (ServerLaunch("box", "img:1", env={"A": "x\x00"}), "NUL byte"),
        (ServerLaunch("box", "img:1", args=("a\x00",)), "NUL byte"),
    ],
)
def test_bad_launches_say_what_is_wrong(launch: ServerLaunch, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_launch(launch)


def test_a_good_launch_is_kept() -> None:
    launch = ServerLaunch("box", "ghcr.io/org/server:1.0", ("--stdio",), {"TOKEN": "x", "_A1": ""})
    assert check_launch(launch) == launch


def test_stdin_messages() -> None:
    assert convert.server_input(pb.ServerInput(stdin=b"x\n")) == b"x\n"
    assert convert.server_input(pb.ServerInput(close_stdin=True)) is None
    assert convert.server_input(pb.ServerInput(start=pb.ServerStart(image="again"))) == b""  # ignored
