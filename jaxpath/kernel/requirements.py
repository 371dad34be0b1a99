# 🧪 The helper every self-check below uses: it runs each requirement's checks on their own, so one missed
# requirement costs only its own points. You need not read it; the exercises tell you what each one checks.
# Each check runs with float32 matrix products at full float32 precision (`jax.default_matmul_precision("highest")`),
# on every platform: a TPU's default is one bfloat16 pass and a GPU's may be TF32, which would move a correct
# answer's numbers past a check's tolerance. Your own cells keep the platform's default.
class Requirements:
    """The requirements of one exercise, checked one by one.

    `check = Requirements("name", {"R1": 1, "R2": 0.5})`, then `with check("R1"): assert ...` for each check
    and `check.score()` last. In JupyterLab (and `nbgrader validate`) `score()` prints one line per
    requirement and raises if one failed; when nbgrader autogrades, it returns the points earned, which
    nbgrader records as the cell's partial credit."""

    last = None  # the latest result, read by `jaxpath validate` and `jaxpath check`

    def __init__(self, exercise, points):
        self.exercise, self.points = exercise, dict(points)
        self.ran, self.failed = set(), {}

    def __call__(self, rid):
        if rid not in self.points:
            raise KeyError(f"{self.exercise} has no requirement {rid!r} (it has {', '.join(self.points)})")
        return type(self)._Check(self, rid)

    def lines(self):
        out = []
        for rid, pts in self.points.items():
            if rid in self.failed:
                out.append(f"✗ {rid} (0/{pts:g}): {self.failed[rid]}")
            elif rid in self.ran:
                out.append(f"✓ {rid} ({pts:g}/{pts:g})")
            else:
                out.append(f"· {rid} (?/{pts:g}): checked when your notebook is graded")
        return out

    def score(self):
        earned = sum(p for r, p in self.points.items() if r in self.ran and r not in self.failed)
        type(self).last = {"exercise": self.exercise, "points": self.points, "ran": sorted(self.ran),
                             "failed": dict(self.failed), "score": earned}
        print(f"{self.exercise}:", *self.lines(), sep="\n  ")
        import os

        if os.environ.get("NBGRADER_EXECUTION") == "autograde":
            return earned
        if self.failed:
            raise AssertionError(f"{self.exercise}: {', '.join(self.failed)} failed (see the ✗ lines above)")
        print(f"{self.exercise}: every visible check passed")
        return None

    class _Check:
        """One requirement's block: an exception inside it fails the requirement and is not raised further."""

        def __init__(self, owner, rid):
            self.owner, self.rid = owner, rid

        def __enter__(self):
            import jax

            self.owner.ran.add(self.rid)
            self.precision = jax.default_matmul_precision("highest")
            self.precision.__enter__()
            return self

        def __exit__(self, kind, error, tb):
            self.precision.__exit__(None, None, None)
            if kind is None or not issubclass(kind, Exception):
                return False  # success, or an interrupt: nothing to record, nothing swallowed
            message = (str(error).strip().splitlines() or ["a check failed"])[0]
            if kind is not AssertionError:
                message = f"raised {kind.__name__}: {message}".rstrip(": ")
            self.owner.failed.setdefault(self.rid, message.removeprefix(f"{self.rid}: ")[:300])
            return True
