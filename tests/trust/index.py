"""A package index on loopback that serves PEP 740 provenance: PEP 691's JSON simple API at
API version 1.3, each file's `provenance` URL (or null), the files and the provenance objects, as
PyPI serves them. pip installs from it; `hermes plugins install` looks the provenance up there.
Beside it, an OSV query API (`POST /v1/query`, as api.osv.dev answers) with the advisories given."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["Index", "serve_index"]


class Index:
    """The projects served: add a file with its provenance object (bytes), or none."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.projects: dict[str, list[dict[str, object]]] = {}
        self.blobs: dict[str, tuple[bytes, str]] = {}
        self.advisories: dict[str, list[dict[str, object]]] = {}  # OSV records by package name

    @property
    def osv_url(self) -> str:
        return f"{self.base}/v1/query"

    @property
    def url(self) -> str:
        return f"{self.base}/simple"

    def add(self, path: Path, project: str, provenance: bytes | None = None) -> None:
        data = path.read_bytes()
        self.blobs[f"/files/{path.name}"] = (data, "application/octet-stream")
        entry: dict[str, object] = {"filename": path.name, "url": f"{self.base}/files/{path.name}",
                                    "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                                    "upload-time": "2025-01-01T00:00:00.000000Z", "provenance": None}
        if provenance is not None:
            self.blobs[f"/provenance/{path.name}"] = (provenance, "application/vnd.pypi.integrity.v1+json")
            entry["provenance"] = f"{self.base}/provenance/{path.name}"
        self.projects.setdefault(project, []).append(entry)


@contextmanager
def serve_index() -> Iterator[Index]:
    index: Index

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path.startswith("/simple/") and path.strip("/").split("/")[-1] in index.projects:
                name = path.strip("/").split("/")[-1]
                body = json.dumps({"meta": {"api-version": "1.3"}, "name": name, "files": index.projects[name]})
                self._send(body.encode(), "application/vnd.pypi.simple.v1+json")
            elif path in index.blobs:
                self._send(*index.blobs[path])
            else:
                self.send_error(404)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            query = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path != "/v1/query":
                self.send_error(404)
                return
            vulns = index.advisories.get(query["package"]["name"], [])
            self._send(json.dumps({"vulns": vulns} if vulns else {}).encode(), "application/json")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index = Index(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
