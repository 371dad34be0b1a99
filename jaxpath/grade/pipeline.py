"""The grading pipeline, declared as nbgrader's Autograde declares it (its sanitize and autograde
preprocessor lists), with jaxpath's two additions: the coordinator runs PREPARE on each submission before a
worker executes it, and RECORD on the executed notebook that comes back.

- `DropEmptyMetadata`: after nbgrader's DeduplicateIds, the copies it emptied become plain cells.
- `TrackingOverwriteCells`: nbgrader's OverwriteCells, remembering every change it undoes (that is how a
  notebook is found *tampered* with its locked cells restored)."""
from __future__ import annotations


class TrackingOverwriteCells:
    """nbgrader's OverwriteCells, remembering every change it undoes (edited locked cells, points, types).

    A test cell whose source is the released one (hidden tests removed) is not a change: nbgrader
    restores the hidden tests into it on purpose."""

    def __new__(cls, changes: list[str], notes: list[str] | None = None,
                earlier: dict[tuple[str, str], set[float]] | None = None, **kw):
        from nbgrader.preprocessors import OverwriteCells

        from ..cells import visible_source

        class Tracking(OverwriteCells):
            def preprocess_cell(self, cell, resources, cell_index):
                self._submitted_source = cell.source
                return super().preprocess_cell(cell, resources, cell_index)

            def report_change(self, name, attr, old, new):
                if attr == "checksum":
                    src = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id).source
                    if self._submitted_source in (src, visible_source(src)):
                        return
                    attr = "source edited"
                if attr == "points" and notes is not None and new in (earlier or {}).get((self.notebook_id, name), ()):
                    # The submission carries the points of an earlier release (the instructor changed them
                    # since): nbgrader grades with today's, and nothing was tampered with. Any other value
                    # was typed in: tampering, though it never pays (nbgrader grades with today's points).
                    notes.append(f"{name} came with {new:g} point(s) (an earlier release?), graded as worth {old:g}")
                else:
                    changes.append(f"{name}: {attr}")
                super().report_change(name, attr, old, new)

        return Tracking(**kw)


class DropEmptyMetadata:
    """After nbgrader's DeduplicateIds: the copies it emptied (`nbgrader: {}`) become plain cells."""

    def preprocess(self, nb, resources):
        for c in nb.cells:
            if "nbgrader" in c.get("metadata", {}) and not c.metadata["nbgrader"]:
                del c.metadata["nbgrader"]
        return nb, resources


def prepare_steps(nbcfg, changes: list[str], notes: list[str] | None = None,
                  earlier: dict[tuple[str, str], set[float]] | None = None) -> list:
    """nbgrader's sanitize steps, in nbgrader's order, with the two above."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteKernelspec

    return [ClearOutput(config=nbcfg), DeduplicateIds(config=nbcfg), DropEmptyMetadata(),
            OverwriteKernelspec(config=nbcfg),
            TrackingOverwriteCells(changes, notes, earlier, config=nbcfg, add_missing_cells=True),
            CheckCellMetadata(config=nbcfg)]


def record_steps(nbcfg) -> list:
    """What nbgrader's autograde runs on the executed notebook: scores saved, late penalties applied."""
    from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput, SaveAutoGrades

    return [IgnorePattern(config=nbcfg), LimitOutput(config=nbcfg), SaveAutoGrades(config=nbcfg),
            AssignLatePenalties(config=nbcfg), CheckCellMetadata(config=nbcfg)]
