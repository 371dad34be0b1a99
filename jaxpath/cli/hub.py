"""`jaxpath hub`: the course on a JupyterHub on this server (deploy/hub.toml), started in one command."""
from __future__ import annotations

import shlex
import signal
from pathlib import Path

from ..config import Config
from ._console import console

DEFAULT = Path(__file__).resolve().parents[2] / "deploy" / "hub.toml"


def register(sub, parents) -> None:
    p = sub.add_parser("hub", parents=[parents.common],
                       help="start the course's JupyterHub (accounts, exchange, formgraders): prints the URL and who is who")
    p.add_argument("--settings", type=Path, default=DEFAULT, help="the hub's settings (default: deploy/hub.toml)")
    p.add_argument("--create-accounts", action="store_true",
                   help="make the accounts the settings name that do not exist, with random passwords (a demo, a test)")
    p.add_argument("--prepare-only", action="store_true",
                   help="set everything up and print the command that starts the hub, without starting it")
    p.add_argument("--remove-accounts", action="store_true",
                   help="remove the accounts an earlier run made (and their homes), then exit")
    p.set_defaults(func=run)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run(args, config: Config) -> int:
    from ..classroom.hub import Hub, describe, load_settings, prepare, remove_created
    from ..classroom.hub.process import hub_command

    settings = load_settings(args.settings)
    if args.remove_accounts:
        removed = remove_created(settings.state)
        console.print(f"removed {len(removed)} account(s): {', '.join(removed) or 'none'}")
        return 0
    prepared = prepare(settings, create_accounts=args.create_accounts)
    for line in prepared.changes:
        console.print(f"  {line}")
    if args.prepare_only:
        console.print("start it with (as root): JAXPATH_HUB_STATE=" + str(settings.state) + " " +
                      shlex.join(hub_command(prepared.hub_data())))
        return 0
    hub = Hub(prepared)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as Ctrl-C does
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started as a background job (SIGINT ignored)
    try:
        hub.start()
        for line in describe(prepared):
            console.print(line, soft_wrap=True, markup=False)
        console.print("Ctrl-C stops the hub and every server it started")
        hub.proc.wait()
        console.print(f"[red]jupyterhub exited with {hub.proc.returncode}[/red]: see {hub.log_path}")
        return 1
    except KeyboardInterrupt:
        console.print("stopping the hub")
        return 0
    finally:
        hub.stop()
