"""`jaxpath platform`: the course on an accelerator, judged against a CPU control on the same host."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("platform", parents=[parents.common],
                       help="run the course and validate's proof on an accelerator; report what differs from its CPU",
                       description=(
                           "plan: write what the accelerator's host runs (build/platforms/plan.json). On that host, "
                           "with only Python, IPython and its own JAX: `python jaxpath/authoring/platforms/onchip.py PLAN OUT` "
                           "(and again with JAX_PLATFORMS=cpu for the control). report: judge both runs into "
                           "reports/platforms/<chip>.md and .json. check: the reported chapters changed since?"))
    steps = p.add_subparsers(dest="step", required=True)
    pl = steps.add_parser("plan", help="write the plan of chapters for the accelerator's host")
    pl.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (default: all)")
    pl.add_argument("--out", default=None, help="the plan's path (default: build/platforms/plan.json)")
    rp = steps.add_parser("report", help="judge an accelerator run and its CPU control into reports/platforms/")
    rp.add_argument("accelerator", help="OUT.json of onchip.py on the accelerator")
    rp.add_argument("control", help="OUT.json of onchip.py with JAX_PLATFORMS=cpu on the same host")
    rp.add_argument("--plan", default=None, help="the plan both ran (default: build/platforms/plan.json)")
    rp.add_argument("--chip", default=None, help="the report's name (default: from the device kind, e.g. tpu-v5e)")
    st = steps.add_parser("stamp", help="write a report's recorded outputs into the chapters' platform-output cells")
    st.add_argument("--chip", default="tpu-v5e", help="the report to take them from (default: tpu-v5e)")
    fg = steps.add_parser("forget", help="take chapters out of a report (changed since their run, not yet run again)")
    fg.add_argument("chapters", nargs="+", help="chapter ids (basics/02_jit), names (02_jit) or parts")
    fg.add_argument("--chip", default="tpu-v5e", help="the report (default: tpu-v5e)")
    ck = steps.add_parser("check", help="fail when a reported chapter's source changed since it ran there")
    ck.add_argument("--chip", default=None, help="one report (default: every report in reports/platforms/)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring import platforms
    from ..authoring.validate import resolve_chapters
    from ..manifest import load_manifest

    default_plan = config.build / "platforms" / "plan.json"
    if args.step == "plan":
        ids = resolve_chapters(load_manifest(config), args.chapters or None)
        out = platforms.write_plan(config, ids, Path(args.out) if args.out else default_plan)
        runner = platforms.RUNNER.relative_to(config.root) if platforms.RUNNER.is_relative_to(config.root) \
            else platforms.RUNNER
        console.print(f"plan of {len(ids)} chapters: {out}")
        console.print("on the accelerator's host, from the course's root:\n"
                      f"  python {runner} {shlex.quote(str(out))} accel.json\n"
                      f"  JAX_PLATFORMS=cpu python {runner} {shlex.quote(str(out))} control.json")
        return 0
    if args.step == "report":
        plan_data = json.loads(Path(args.plan or default_plan).read_text(encoding="utf-8"))
        accel = Path(args.accelerator)
        chip = args.chip or platforms.chip_name(platforms.run_platform(accel))
        js, _ = platforms.report_paths(config, chip)
        previous = json.loads(js.read_text(encoding="utf-8")) if js.exists() else None  # entries this run lacks
        report = platforms.build_report(config, plan_data, accel, Path(args.control), chip, previous)
        js, md = platforms.write_report(config, report)
        t = platforms.totals(report)
        console.print(f"{report['chip']}: {len(report['chapters'])} chapters; on the accelerator only: "
                      f"{t['platform_cells']} cells raise, {t['platform_references']} references fail, "
                      f"{t['platform_wrong_passing']} wrong answers pass, {t['platform_alternatives']} alternatives "
                      f"rejected; {t['pallas_compiled']} compiled pallas_calls")
        console.print(f"reports: {md.relative_to(config.root)}, {js.relative_to(config.root)}")
        return 0
    if args.step == "stamp":
        js, _ = platforms.report_paths(config, args.chip)
        changed = platforms.stamp(config, json.loads(js.read_text(encoding="utf-8")))
        console.print(f"recorded outputs written into: {', '.join(changed) or 'nothing (already in step)'}")
        return 0
    if args.step == "forget":
        js, _ = platforms.report_paths(config, args.chip)
        report = json.loads(js.read_text(encoding="utf-8"))
        ids = resolve_chapters(load_manifest(config), args.chapters)
        gone = [c for c in ids if report["chapters"].pop(c, None) is not None]
        platforms.write_report(config, report)
        console.print(f"taken out of {js.name}: {', '.join(gone) or 'nothing (not in it)'}")
        return 0
    folder = config.root / "reports" / "platforms"
    paths = [folder / f"{args.chip}.json"] if args.chip else sorted(folder.glob("*.json"))
    stale_any = False
    for path in paths:
        report = json.loads(path.read_text(encoding="utf-8"))
        stale = platforms.check(config, report)
        unstamped = platforms.stamps_in_step(config, report)
        if unstamped:
            stale_any = True
            console.print(f"[red]{path.name}[/red]: platform-output cells not in step with the run: "
                          f"{', '.join(unstamped)} (`jaxpath platform stamp --chip {report['chip']}`)")
        if stale:
            stale_any = True
            console.print(f"[red]{path.name}[/red]: changed since their run on {report['chip']}: {', '.join(stale)} "
                          "(rerun them there: `jaxpath platform plan CHAPTER…`)")
        else:
            console.print(f"{path.name}: current ({len(report['chapters'])} chapters)")
    return 1 if stale_any else 0
