"""The worker's response socket (brainstore.serving): a response's head goes out with its body."""

from __future__ import annotations

import socket

from brainstore.serving import _HeadHeld


class RecordingSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.shut = False

    def sendall(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def shutdown(self, how: int) -> None:
        self.shut = True


HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"


def test_the_head_goes_out_with_the_first_body_bytes_and_the_rest_as_written() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.sendall(HEAD)
    assert sock.sent == []
    reply.sendall(b"{}")
    reply.sendall(b"more")
    reply.flush()
    assert sock.sent == [HEAD + b"{}", b"more"]


def test_a_head_without_a_body_goes_out_at_flush_once() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.flush()  # nothing written yet: nothing to send
    reply.sendall(HEAD)
    reply.flush()
    reply.flush()
    assert sock.sent == [HEAD]


def test_any_other_use_of_the_socket_sends_what_is_held_first() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.sendall(HEAD)
    reply.shutdown(socket.SHUT_WR)  # gunicorn's close after a failure once the head was "sent"
    assert sock.sent == [HEAD] and sock.shut
