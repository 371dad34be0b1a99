"""`jaxpath mutants`: mutation testing of every exercise.

`validate` proves an exercise's tests against the wrong answers its author thought of; this proves them
against mistakes nobody listed. For each exercise, `mutate.generate` makes mutants of the reference
solution (small edits inside the solution region), and each runs, like a wrong variant, against the
exercise's tests (visible and hidden): a mutant that fails a test is *killed*; one that passes every
test *survives*. A survivor is either a hole in the tests or an *equivalent* mutant (it behaves like the
reference in every way the statement cares about), which the author records in the variants file:

    [[name.equivalent]]
    id = "number-5b6932b8"
    why = "the noise is symmetric: -0.1 * eps has the same distribution as 0.1 * eps"

The machinery is validate's: one kernel per chapter runs the chapter top to bottom; at each answer cell,
before the reference runs, the reference and then every mutant run in a throw-away copy of the kernel's
namespace (`jaxpath.kernel.trial.run`, one round trip each), followed by the exercise's test cells. A mutant has a time
limit (a multiple of the reference's time, with a floor); one that hangs is interrupted, and if the
kernel does not answer, it is restarted and the chapter replayed up to the exercise.

Results go to `build/mutants/` (a JSON per chapter, and `report.md` with every survivor as a diff) and
into the committed `MUTANTS.md`, whose first line states the course-wide kill rate, keyed per chapter
by the hash of its code cells, its variants file and the engine version: `jaxpath mutants --check`
(and the test suite) fails when a chapter changed and its mutation results did not.
"""
from __future__ import annotations

from .results import COURSE_MIN, EXERCISE_MIN, SUMMARY_FILE, ChapterResult, ExerciseResult, MutantResult, chapter_key  # noqa: F401
from .run import count_mutants, mutants_one, run_mutants  # noqa: F401
from .summary import CheckResult, check, committed, render_report, render_summary, write_summary  # noqa: F401
