"""`jaxpath serve`: the course site on 127.0.0.1 with the earned progress of a work folder."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("serve", parents=[parents.common],
                       help="serve the built site on 127.0.0.1, showing the progress a work folder earned")
    p.add_argument("--work", type=Path, default=Path("."), help="the learner's work folder (default: here)")
    p.add_argument("--site", type=Path, default=None, help="the built site (default: build/site/)")
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free one)")
    p.add_argument("--lab-url", default="", help="a JupyterLab serving the work folder, e.g. http://127.0.0.1:8888 "
                                                 "(chapter pages then link into it)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..learner.serve import SiteServer
    from ..learner.site import SITE_OUT

    server = SiteServer(config, args.site or config.build / SITE_OUT, args.work, args.port, args.lab_url)
    console.print(f"serving {server.url} (progress of {server.work}); Ctrl-C stops")
    console.file.flush()  # the readiness line: a script waiting for the server reads it
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
