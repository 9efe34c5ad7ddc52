"""How `python -m app serve` runs uvicorn for clients it cannot trust: timeouts and limits.

- A connection must deliver a complete request head (request line and headers) within HEADER_TIMEOUT
  seconds, counted from the connection or from the first byte of a later request on it; then it is
  closed. uvicorn has no such timeout (its keep-alive timer stops at the first byte), so a client that
  sends half a request line and stalls, or trickles a byte at a time, would hold its connection forever.
- An idle keep-alive connection is closed after KEEP_ALIVE seconds (uvicorn's timeout_keep_alive).
- A request head may be at most MAX_HEAD_BYTES (h11's max_incomplete_event_size for a head still
  arriving; app/head_limit.py for one that arrived whole); more is a 431.
- Beyond LIMIT_CONCURRENCY connections or requests at once, uvicorn answers 503 (its own plain text).
- A request h11 cannot parse, or a head over the limit, gets a JSON error like every other one, with
  X-Content-Type-Options: nosniff, and the connection is closed.

Shards are streamed without a write timeout: a client that stops reading holds its connection until it
goes away. In public, run behind a reverse proxy that buffers responses (docs/deploy.md).
"""

import functools
import http
import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.errors import NOSNIFF
from app.head_limit import MAX_HEAD_BYTES

HEADER_TIMEOUT = 10.0  # seconds; a browser sends its whole head in one packet
KEEP_ALIVE = 5  # seconds, uvicorn's default: long enough for a page's burst of requests
LIMIT_CONCURRENCY = 512  # each streaming shard holds an open file and up to ~0.5 MB of buffers


class _RecordingConnection(h11.Connection):
    """h11's connection, keeping the last parse error so the answer can use its status (431 or 400)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self):
        try:
            return super().next_event()
        except h11.RemoteProtocolError as e:
            self.last_error = e
            raise


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head and JSON for the errors it answers itself."""

    def __init__(self, *args, header_timeout: float = HEADER_TIMEOUT, **kwargs):
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.conn = _RecordingConnection(h11.SERVER, self.config.h11_max_incomplete_event_size or MAX_HEAD_BYTES)
        self._head_deadline = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._await_head()  # part of a head arrived: the clock runs from its first byte, not the last
        else:
            self._stop_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.header_timeout, self._head_too_slow)

    def _stop_waiting(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # nothing can be answered before a request line has arrived

    def send_400_response(self, msg: str) -> None:
        error = self.conn.last_error
        status = error.error_status_hint if error is not None else 400
        if status == 431:
            message = f"the request line and headers are over {MAX_HEAD_BYTES} bytes; at most that is accepted"
        else:
            message = f"malformed HTTP request ({str(error or msg)[:80]}): send HTTP/1.1 with valid headers"
        body = json.dumps({"error": message, "status": status}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *((name.lower().encode(), value.encode()) for name, value in NOSNIFF.items()),
        ]
        reason = http.HTTPStatus(status).phrase.encode()
        for event in (h11.Response(status_code=status, headers=headers, reason=reason), h11.Data(data=body)):
            self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()


def uvicorn_options(header_timeout: float = HEADER_TIMEOUT) -> dict:
    """The keyword arguments of uvicorn.run / uvicorn.Config that `python -m app serve` uses."""
    return {
        "http": functools.partial(GuardedH11Protocol, header_timeout=header_timeout),
        "timeout_keep_alive": KEEP_ALIVE,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "limit_concurrency": LIMIT_CONCURRENCY,
    }
