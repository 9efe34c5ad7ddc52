"""CORS for the weight endpoint, so a page on another origin (a notebook, a CDN-hosted demo) can load
models from this server: every /models answer, errors included, allows any origin and exposes the
headers a loader needs; OPTIONS preflights are answered here (Range and If-None-Match are not
CORS-safelisted request headers, so a cross-origin ranged or conditional fetch is preflighted).

The weights are public and no credentials are involved, so "*" is right and no Vary: Origin is needed.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIX = "/models"
ALLOW = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"ETag, Content-Range, Content-Length, Accept-Ranges"),
    # Lets a page that sets Cross-Origin-Embedder-Policy: require-corp use the weights too.
    (b"cross-origin-resource-policy", b"cross-origin"),
]
PREFLIGHT = [
    (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
    (b"access-control-allow-headers", b"Range, If-None-Match, If-Range"),
    (b"access-control-max-age", b"86400"),
    (b"allow", b"GET, HEAD, OPTIONS"),
    (b"content-length", b"0"),
    (b"x-content-type-options", b"nosniff"),
]


def is_models_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def cors_headers(path: str) -> dict[str, str]:
    """The CORS headers an answer for `path` carries, for answers made outside this middleware (a 500)."""
    return {name.decode(): value.decode() for name, value in ALLOW} if is_models_path(path) else {}


class ModelsCORS:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_models_path(scope["path"]):
            return await self.app(scope, receive, send)
        if scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": ALLOW + PREFLIGHT})
            await send({"type": "http.response.body", "body": b""})
            return None

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *ALLOW]
            await send(message)

        return await self.app(scope, receive, send_with_cors)
