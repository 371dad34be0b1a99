"""`jaxpath inbound`: collect a part from nbgrader's exchange into submitted/, whole submissions only, at a time
the student cannot forge, by the rule the instructor chooses; safe while students submit and to kill."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    from ..classroom.inbound import RULES

    p = sub.add_parser("inbound", parents=[parents.common, parents.gradebook],
                       help="collect a part from the nbgrader exchange into submitted/ (atomic, resumable; "
                            "in place of `nbgrader collect`)")
    p.add_argument("part", help="the assignment (nbgrader assignment id), e.g. basics")
    p.add_argument("--rule", choices=RULES, default="before-due",
                   help="which submission counts: the newest made by the due date (nbgrader's --before-duedate; "
                        "the newest late one only when none was on time), or the newest (default: %(default)s)")
    p.add_argument("--due", default=None,
                   help="the due date, ISO 8601 in UTC (default: the part's due date in the gradebook)")
    p.add_argument("--exchange", default=None, help="the exchange's root (default: the course's, nbgrader_config.py)")
    p.add_argument("--student", nargs="+", help="only these students")
    p.add_argument("--until", default=None, metavar="FILE",
                   help="collect again at every change in the inbound folder (inotify) until FILE exists, then once "
                        "more; one line of JSON per round (start, end, the entries collected)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.inbound import InboundError, collect_inbound, collect_until, due_date

    nbcfg = config.nbgrader(args.db)
    exchange = Path(args.exchange or nbcfg.Exchange.root)
    course_id = config.coursedir(args.db).course_id
    def due_of():
        if args.due:
            return dt.datetime.fromisoformat(args.due).replace(tzinfo=None)
        return due_date(config.coursedir(args.db).db_url, args.part)

    if args.until:
        def on_round(start, end, r):
            print(json.dumps({"start": start, "end": end, "collected": [e.path.name for e in r.collected],
                              "incomplete": len(r.incomplete)}), flush=True)

        try:
            collect_until(exchange, course_id, args.part, config.root, Path(args.until), due_of=due_of,
                          on_round=on_round, rule=args.rule)
        except InboundError as e:
            console.print(f"[red]error:[/red] {e}", soft_wrap=True)
            return 2
        return 0
    due = due_of()
    try:
        r = collect_inbound(exchange, course_id, args.part, config.root, rule=args.rule, due=due,
                            students=args.student)
    except InboundError as e:
        console.print(f"[red]error:[/red] {e}", soft_wrap=True)
        return 2
    console.print(f"collected {len(r.collected)} submission(s) of {args.part}, {len(r.unchanged)} unchanged since "
                  f"an earlier collect ({'no due date' if due is None else f'due {due:%Y-%m-%d %H:%M:%S} UTC'}, "
                  f"rule {args.rule})")
    for e in r.late:
        console.print(f"[yellow]late[/yellow] {e.student}: made {e.trusted:%Y-%m-%d %H:%M:%S} UTC")
    for e in r.forged:
        console.print(f"[yellow]claims on time[/yellow] {e.student}: {e.path}/timestamp.txt says {e.claimed}, "
                      f"but the entry was made {e.trusted:%Y-%m-%d %H:%M:%S} UTC (counted late)", soft_wrap=True)
    for p in r.incomplete:
        console.print(f"[yellow]not yet whole[/yellow] {p}: a submit under way (or one that died); a later collect "
                      "takes it once it is complete", soft_wrap=True)
    return 0
