"""What is not content in a cell's output: memory addresses, timings (and ratios of timings), temp paths,
ipykernel's per-process cell files, installation paths, object ids, process ids, dates, log prefixes, frames of
tracebacks inside libraries, and the version numbers of the stack itself (the stamp says which stack ran).

`normalize(text)` rewrites each of these to a placeholder, so that two runs of the same notebook on the same
stack compare equal, and a difference that is left is one a reader of the chapter would see."""
from __future__ import annotations

import re
from typing import Iterable

TIME_UNIT = r"(?:ns|µs|μs|us|ms|s|sec|secs|seconds?|min|minutes?)"
NUMBER = r"[-+]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?"

RULES: list[tuple[str, re.Pattern, str]] = [
    # ipykernel writes each cell to /tmp/ipykernel_<pid>/<hash of the source>.py: the pid changes every run
    ("cell file", re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),
    ("ipython input", re.compile(r"<ipython-input-\d+-[0-9a-f]+>"), "<cell>"),
    # an installed package's file, wherever the environment lies (the course's .venv, a side venv)
    ("site-packages", re.compile(r"(?:[\w.~+-]*/)+(?:site|dist)-packages/"), "<site-packages>/"),
    ("stdlib", re.compile(r"(?:/[\w.+-]+)+/lib/python3\.\d+/(?!<)"), "<stdlib>/"),
    ("temp path", re.compile(r"/(?:tmp|var/tmp|dev/shm)/[\w.@%+-]+"), "<tmp>"),
    # any other absolute path depends on where the course was cloned and where Python lives (and a chapter may
    # cut one short: "(/work/main/.venv/lib ..."): never content
    ("absolute path", re.compile(r"(?<![\w.>)\]:/])/(?:[\w.+@~-]+/)+[\w.+@~-]*"), "<path>"),
    ("address", re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0x…"),
    ("object id", re.compile(r"\b(id|pid|uid|tid|thread|process)([=: (]+)\d{5,}\b"), r"\1\2<id>"),
    # CPython's id() of an object is its address: 15 digits from 10… to 14… (<list 139843831947840>)
    ("address as id", re.compile(r"(?<![\w.])1[0-4]\d{13}(?![\w.])"), "<id>"),
    ("ipykernel pid", re.compile(r"\bipykernel_\d+\b"), "ipykernel_<pid>"),
    ("profile run", re.compile(r"\b\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\b"), "<date>"),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "<date>"),
    ("log prefix", re.compile(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]", re.M), "<log>"),
    ("timing", re.compile(rf"{NUMBER}\s?{TIME_UNIT}\b"), "<time>"),
]
"""(name, pattern, replacement), applied in order."""

RATIO = re.compile(rf"(?:\b{NUMBER}\s?[x×](?![\w])|\b(ratio|speedup|faster|slower)(\W{{1,3}}){NUMBER})")
MEASURED = re.compile(rf"(?:(?<![\w.])[x×]\s?{NUMBER}\b|\b{NUMBER}\s?[x×](?![\w])|(?<![\w.])[-+]?\d*\.\d+(?:[eE][-+]?\d+)?\b)")
CLOCK = re.compile(r"perf_counter|\btime\.time\(|\btimeit\b|\bmonotonic\b|process_time|%%?time\b|datetime\.now")
# host randomness without a seed (NumPy's global generator, the random module): different on every run
UNSEEDED = re.compile(r"\bnp\.random\.(?!seed\b|default_rng\(\s*\d|RandomState\(\s*\d)\w+\(|"
                      r"(?<![\w.])random\.(?:random|uniform|randint|choice|shuffle|gauss|sample)\(")
SEEDED = re.compile(r"\bnp\.random\.seed\(|(?<![\w.])random\.seed\(")
# a profile is a recording of one run (its events, threads, sizes and order): only its warnings are content
PROFILE = re.compile(r"\bjax\.profiler\.(?:trace|start_trace|save_device_memory_profile)\b|\bProfileData\b")
# a serialized or compiled program carries the source locations of its operations (file paths, which differ
# with the pid in ipykernel's cell files and with where the packages are installed): its size in bytes is
# content only to its order of magnitude (as is every count of 1000 or more that such a cell prints: sizes)
SERIALIZES = re.compile(r"\.serialize\(|\.compile\(|\bexport\.export\b|\bjax\.export\b|\.as_text\(")
BYTES = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d{4,})(?![\w]|[.,]\d)()")
WARNING = re.compile(r"\b[A-Z]\w*Warning\b|\bwarn(?:s|ing|ings|ed)?\b", re.I)
MEASUREMENT = re.compile(r"<(?:time|ratio|measured)>")
SPACES = re.compile(r"[ \t]+")
OPEN_PAD = re.compile(r"([(\[{]) +")
TRACEBACK = re.compile(r"^((?:\[stderr\] )?[ \t]*)Traceback \(most recent call last\):\n(?:\1[ \t]+.*\n?)+", re.M)


def _ratios(line: str) -> str:
    """On a line that shows a timing, a ratio (89x, 'ratio 19.8') is a ratio of timings: noise too."""
    if "<time>" not in line:
        return line
    return RATIO.sub(lambda m: f"{m.group(1)}{m.group(2)}<ratio>" if m.group(1) else "<ratio>", line)


def version_rule(versions: Iterable[str]) -> re.Pattern | None:
    """A pattern for the version strings of the stack (pinned and side), as whole tokens."""
    vs = sorted({v for v in versions if isinstance(v, str) and re.fullmatch(r"\d+(?:\.\d+)+\w*", v)}, key=len, reverse=True)
    if not vs:
        return None
    return re.compile(r"(?<![\w.])v?(?:" + "|".join(map(re.escape, vs)) + r")(?![\w.]*\d)")


def unrepeatable_cells(sources: list[str]) -> set[int]:
    """Indices of the cells whose numbers differ on every run: a cell that reads a clock or draws unseeded host
    random numbers (where the chapter seeds none), or calls a function defined in one that does (a chapter's
    `bench` helper), followed through helpers that call helpers."""
    seeded = any(SEEDED.search(src) for src in sources)
    clocked = {i for i, src in enumerate(sources) if CLOCK.search(src) or (not seeded and UNSEEDED.search(src))}
    while True:
        helpers = {name for i in clocked for name in re.findall(r"^\s*def\s+(\w+)", sources[i], re.M)}
        call = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(helpers))) + r")\s*\(") if helpers else None
        more = {i for i, src in enumerate(sources) if call and call.search(src)} - clocked
        if not more:
            return clocked
        clocked |= more


def profile_cells(sources: list[str]) -> set[int]:
    """Indices of the cells that record a profile (jax.profiler.trace, start_trace, a device memory profile)."""
    return {i for i, src in enumerate(sources) if PROFILE.search(src)}


def serializing_cells(sources: list[str]) -> set[int]:
    """Indices of the cells that serialize or compile a program (jax.export, .serialize(), .compile())."""
    return {i for i, src in enumerate(sources) if SERIALIZES.search(src)}


def _magnitude(m: re.Match) -> str:
    n = int(m.group(1).replace(",", ""))
    return f"~1e{len(str(n)) - 1}{m.group(2)}" if n >= 1000 else m.group(0)


def normalize(text: str, versions: re.Pattern | None = None, timing: bool = False, recording: bool = False,
              sizes: bool = False) -> str:
    """`text` with everything that is not content replaced by placeholders (see RULES). With `timing` (the
    output of an unrepeatable cell: it measures time or draws unseeded random numbers), every non-integer
    number and every ratio is a measurement too, and a line that shows a measurement is one as a whole (which
    of two timings won is a measurement, not content). With `recording` (a cell that records a profile), only
    the lines about a warning are kept. With `sizes` (a cell that serializes or compiles a program), a number
    of 1000 or more (a size in bytes) is kept as its order of magnitude.
    Runs of spaces count as one (alignment padding changes with the width of a number)."""
    # A traceback printed by a library (jax logs one when a callback fails): its frames are the library's
    # implementation, its last line (the exception) is content.
    text = TRACEBACK.sub(lambda m: f"{m.group(1)}Traceback (most recent call last): <frames>\n", text)
    for _, pattern, repl in RULES:
        text = pattern.sub(repl, text)
    if versions is not None:
        text = versions.sub("<version>", text)
    lines = [_ratios(line.rstrip()) for line in text.split("\n")]
    if timing:
        lines = [MEASURED.sub("<measured>", line) for line in lines]
        lines = ["<measurement>" if MEASUREMENT.search(line) else line for line in lines]
    if sizes:
        lines = [BYTES.sub(_magnitude, line) for line in lines]
    if recording:
        lines = [line for line in lines if WARNING.search(line)] + ["<recording>"]
    return "\n".join(OPEN_PAD.sub(r"\1", SPACES.sub(" ", line)) for line in lines)
