"""A request whose line and headers together exceed MAX_HEAD_BYTES gets a 431 JSON error before any route runs.

uvicorn's h11 parser has the same limit (app/connection_limits.py), but applies it only to a head that is still
incomplete (a slow client); a complete head that arrives in one read passes it, so it is checked here
on what arrived.
"""

from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import error_response

MAX_HEAD_BYTES = 16 * 1024  # a browser's request for a shard is well under 2 KiB


def head_bytes(scope: Scope) -> int:
    """The size of the request line and headers as they were sent (near enough: ': ' and CRLF counted)."""
    target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
    return len(scope["method"]) + target + sum(len(name) + len(value) + 4 for name, value in scope["headers"])


class HeadLimit:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (size := head_bytes(scope)) > MAX_HEAD_BYTES:
            message = f"the request line and headers are {size} bytes long; at most {MAX_HEAD_BYTES} are accepted"
            await error_response(431, message)(scope, receive, send)
            return
        await self.app(scope, receive, send)
