"""Every error answer is JSON: {"error": what was wrong, "status": code}, with any extra headers it needs,
X-Content-Type-Options: nosniff, and CORS on /models (see app/cors.py), whoever raised it: a route,
Starlette (404 for an unknown route, 405), request validation, or an unexpected exception (500).

What the client sent is echoed only as a short prefix (`clip`): a 100 KB path or header never comes back.
"""

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from app.cors import cors_headers

NOSNIFF = {"X-Content-Type-Options": "nosniff"}
CLIP = 80  # characters of a client's path or header value an error message may repeat


class HTTPError(HTTPException):
    """Raised by the routes; `detail` is the sentence the client gets."""


def clip(value: str, limit: int = CLIP) -> str:
    """repr() of at most `limit` characters of value, saying how long it really was when it is cut."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def error_response(status: int, message: str, headers: dict[str, str] | None = None, *, path: str = "") -> JSONResponse:
    headers = {**NOSNIFF, **cors_headers(path), **(headers or {})}
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        path = request.scope["path"]
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such resource: {clip(path)}"
        if exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow")
            message = f"method {request.method[:20]} is not allowed on {clip(path)}"
            message += f": it allows {allowed}" if allowed else ""
        return error_response(exc.status_code, message, dict(exc.headers or {}))

    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return error_response(400, f"invalid request: {problems[:200]}")  # names and rules, never the values

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette's outermost middleware calls this, outside ModelsCORS, so CORS is added here; it then
        # re-raises, so uvicorn logs the traceback. The client learns nothing about the server's internals.
        path = request.scope["path"]
        message = f"the server failed to answer {request.method[:20]} {clip(path)}; the error is in its log"
        return error_response(500, message, path=path)

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(Exception, unexpected)
