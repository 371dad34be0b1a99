"""`jaxpath serve`: the built site on a loopback port, with the learner's earned progress.

A stdlib HTTP server bound to 127.0.0.1 serves build/site/ as files, and one generated answer:
`/_jaxpath/progress.json`, the state of the track for the work folder (jaxpath.learner.progress), read afresh on every
request, so a `jaxpath check` in another terminal shows on the next reload. The landing page's script reads it
and shows earned chapters apart from self-marked ones; where a JupyterLab runs beside it (`lab_url`), chapter
pages get a link that opens the chapter's notebook there."""
from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path

from ..config import Config
from ..errors import JaxpathError
from .progress import Course, ProgressError

PROGRESS_PATH = "/_jaxpath/progress.json"


class _Handler(http.server.SimpleHTTPRequestHandler):
    server: "SiteServer"

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        if self.path.split("?", 1)[0] == PROGRESS_PATH:
            try:
                body = dict(self.server.course.progress(self.server.work).as_json(), lab_url=self.server.lab_url)
                status = 200
            except ProgressError as e:
                body, status = {"error": str(e)}, 500
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        super().do_GET()

    def log_message(self, format, *args):  # noqa: A002 (the stdlib's signature)
        pass


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, config: Config, site: Path, work: Path, port: int = 0, lab_url: str = ""):
        site = Path(site)
        if not (site / "index.html").exists():
            raise JaxpathError(f"{site}: no built site (index.html) here: run `jaxpath site` first")
        if not Path(work).is_dir():
            raise JaxpathError(f"{work}: no such work folder")
        self.course = Course.load(config)
        self.work = Path(work).resolve()
        self.lab_url = lab_url.rstrip("/")
        super().__init__(("127.0.0.1", port), functools.partial(_Handler, directory=str(site)))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def start(self) -> threading.Thread:
        """Serve in a background thread (stop with shutdown())."""
        t = threading.Thread(target=self.serve_forever, daemon=True)
        t.start()
        return t
