"""Nothing outside the served folders can be read: every trick is sent byte for byte to a real uvicorn
server over a socket (an HTTP client would normalise '..' away), and must give 400 or 404, never the file."""

import socket

import pytest
import uvicorn

from app import create_app
from app.errors import HTTPError
from app.paths import check_relative, safe_file
from tests.server_site import SECRET, SHARD1, build_site, live_server, sha256

S1 = sha256(SHARD1)
SHARD = f"/models/tiny/shards/{S1}"

# Each request target is sent exactly as written.
ATTEMPTS = [
    # plain dot-dot
    "/../secret.txt",
    "/static/../../secret.txt",
    "/models/../secret.txt",
    "/models/../../secret.txt",
    "/models/tiny/../../secret.txt",
    "/models/../models/tiny/../../secret.txt",
    f"{SHARD}/../../../../secret.txt",
    "/pyodide/../../secret.txt",
    "/engine/../secret.txt",
    # percent-encoded dots and slashes, upper and lower case, mixed
    "/%2e%2e/secret.txt",
    "/%2E%2E/secret.txt",
    "/..%2fsecret.txt",
    "/..%2Fsecret.txt",
    "/%2e%2e%2fsecret.txt",
    "/.%2e/secret.txt",
    "/models/%2e%2e/model.json",
    "/models/..%2f..%2fsecret.txt",
    "/models/%2e%2e%2f%2e%2e%2fsecret.txt/model.json",
    "/models/tiny%2f..%2f..%2fsecret.txt",
    f"{SHARD}/..%2f..%2f..%2f..%2fsecret.txt",
    f"{SHARD}/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt",
    "/pyodide/%2e%2e%2f%2e%2e%2fsecret.txt",
    "/pyodide/..%2fverified.json",
    "/engine/x/..%2f..%2fsecret.txt",
    # double encoding: decoded once, it is a literal name with '%' in it
    "/%252e%252e%252fsecret.txt",
    f"{SHARD}/%252e%252e%252f%252e%252e%252fsecret.txt",
    # absolute paths
    "//etc/passwd",
    "/%2fetc%2fpasswd",
    "/%2Fetc/passwd",
    f"{SHARD}/%2fetc%2fpasswd",
    "/models/%2fetc/model.json",
    "/pyodide//etc/passwd",
    # backslashes (another OS's separator), raw and encoded
    "/..%5csecret.txt",
    "/..%5C..%5Csecret.txt",
    f"{SHARD}/..%5c..%5c..%5c..%5csecret.txt",
    "/models/tiny%5c..%5c..%5csecret.txt/model.json",
    "/C:%5cWindows%5cwin.ini",
    # NUL and other control bytes
    "/secret.txt%00",
    "/app.js%00.png",
    f"{SHARD}/group1-shard1of2.bin%00",
    "/models/tiny%00/model.json",
    "/pyodide/pyodide.js%00",
    "/%0a/secret.txt",
    # symlinks pointing out of the served folders
    "/link-out.txt",
    f"/models/tiny/shards/{sha256(SECRET.encode())}/link.bin",
    "/models/escaped/model.json",
    f"/models/escaped/shards/{sha256(SECRET.encode())}/w.bin",
    # the secret through names that exist elsewhere
    "/secret.txt",
    "/models/secret.txt",
    "/models/tiny/secret.txt",
]


def raw_request(port: int, target: str) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    app = create_app(build_site(tmp_path_factory.mktemp("site")))
    with live_server(uvicorn.Config(app, log_level="warning")) as port:
        yield port


def test_the_live_server_serves_the_real_files(port):
    # the same server does serve what it should, so the refusals below are not a broken setup
    assert raw_request(port, f"{SHARD}/group1-shard1of2.bin") == (200, SHARD1)
    assert raw_request(port, "/app.js")[0] == 200
    assert raw_request(port, "/pyodide/pyodide.js")[0] == 200


@pytest.mark.parametrize("target", ATTEMPTS)
def test_traversal_attempt_is_refused(port, target):
    status, body = raw_request(port, target)
    assert status in (400, 404), (status, body[:200])
    assert SECRET.encode() not in body and b"root:" not in body


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("..", "'..'"),
        ("a/../b", "'..'"),
        ("a/./b", "'.'"),
        ("a//b", "''"),
        ("a/", "''"),
        ("a\\b", "backslashes"),
        ("a\x00b", "control characters"),
        ("a\nb", "control characters"),
    ],
)
def test_check_relative_refuses(rel, reason):
    with pytest.raises(HTTPError) as e:
        check_relative(rel)
    assert e.value.status_code == 400 and reason in e.value.detail


def test_safe_file(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("a")
    (tmp_path / "out.txt").write_text("out")
    (root / "out-link").symlink_to(tmp_path / "out.txt")
    (root / "dir-link").symlink_to(tmp_path)
    (root / "in-link").symlink_to(root / "sub" / "a.txt")
    (root / "loop").symlink_to(root / "loop")
    assert safe_file(root, "sub/a.txt") == (root / "sub" / "a.txt").resolve()
    assert safe_file(root, "in-link") == (root / "sub" / "a.txt").resolve()
    for rel in ("out-link", "dir-link/out.txt", "sub", "missing", "loop", "x" * 5000):
        assert safe_file(root, rel) is None, rel
