"""`jaxpath lti`: grades back to the LMS through LTI 1.3 Assignment and Grade Services (`push`), and the tool's key
(`key`). The launch into the hub is `jaxpath hub` with an [lti] table in its settings (docs/lti.md)."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("lti", parents=[parents.common], help="LTI 1.3: push a part's grades to the LMS (AGS); the tool's key")
    actions = p.add_subparsers(dest="action", required=True)
    settings_help = "the hub's settings, with [lti] and the course's lti_lineitems (default: deploy/hub.toml of the course)"
    push = actions.add_parser("push", parents=[parents.common, parents.gradebook],
                              help="send each student's score per notebook of PART (as `jaxpath export` counts it) "
                                   "to the LMS's line items; only what the LMS does not have yet")
    push.add_argument("part")
    push.add_argument("--settings", type=Path, default=None, help=settings_help)
    push.add_argument("--course", default=None, help="the course of the settings (default: nbgrader's course id)")
    push.add_argument("--dry-run", action="store_true", help="show what would be sent; contact nothing")
    push.set_defaults(func=run_push)
    key = actions.add_parser("key", parents=[parents.common],
                             help="print the public JWK of the tool's key ([lti] private_key), which the LMS is given; "
                                  "--create makes the key first (mode 0600)")
    key.add_argument("--settings", type=Path, default=None, help=settings_help)
    key.add_argument("--create", action="store_true", help="make the key file when it does not exist")
    key.set_defaults(func=run_key)


def _settings(args, config: Config):
    from ..classroom.hub import load_settings

    return load_settings(args.settings or config.root / "deploy" / "hub.toml")


def _table(the_plan, show_sent: bool):
    from rich.table import Table

    t = Table(title=f"{the_plan.course} {the_plan.part}: scores for the LMS", show_lines=False)
    for col in ("notebook", "student", "LMS user", "score", "state"):
        t.add_column(col, justify="right" if col == "score" else "left")
    for i in the_plan.items:
        if i.state == "sent" and not show_sent:
            continue
        state = {"send": "[green]to send[/green]", "sent": "sent before", "held": f"[yellow]held: {i.reason}[/yellow]",
                 "no LMS user": f"[red]no LMS user ({i.reason})[/red]"}[i.state]
        t.add_row(i.notebook, i.student, i.user_id or "", f"{i.score:g} / {i.max_score:g}", state)
    return t


def run_push(args, config: Config) -> int:
    from ..classroom.lti import plan, push

    settings = _settings(args, config)
    if args.dry_run:
        the_plan = plan(config, args.part, settings, course_id=args.course, db_url=args.db)
        console.print(_table(the_plan, show_sent=True))
        made = [nb for nb, url in the_plan.lineitems.items() if url is None]
        console.print(f"{len(the_plan.pending)} score(s) to send, {len(the_plan.items) - len(the_plan.pending)} not; "
                      + (f"line items to find or make: {', '.join(made)}" if made else "every line item is recorded")
                      + f" (record: {the_plan.record}); nothing was sent")
        return 0
    report = push(config, args.part, settings, course_id=args.course, db_url=args.db)
    the_plan = report.plan
    left = [i for i in the_plan.items if i.state in ("held", "no LMS user")]
    if left:
        console.print(_table(type(the_plan)(the_plan.part, the_plan.course, the_plan.record, the_plan.lineitems, left),
                             show_sent=False))
    console.print(f"sent {len(report.sent)} score(s)"
                  + (f", made line items for {', '.join(report.created)}" if report.created else "")
                  + f"; {sum(i.state == 'sent' for i in the_plan.items)} the LMS had already; {len(left)} not sent"
                  + f" (record: {the_plan.record})")
    return 1 if left else 0


def run_key(args, config: Config) -> int:
    import json

    from ..classroom.lti.push import LtiPushError, make_key, public_jwk, read_private_key

    settings = _settings(args, config)
    if settings.lti is None:
        raise LtiPushError(f"{settings.path}: no [lti] table")
    path = settings.lti.private_key
    if args.create and path is not None and not path.exists():
        make_key(path)
        console.print(f"made {path} (mode 0600)")
    from cryptography.hazmat.primitives import serialization

    key = read_private_key(path, settings.path, config.root)
    console.print("the tool's public key as a JWK (Canvas: 'Public JWK'):")
    console.print(json.dumps(public_jwk(key), indent=1), markup=False)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    console.print("and as PEM (Moodle: 'Public key type: RSA key'):")
    console.print(pem.decode().strip(), markup=False)
    return 0
