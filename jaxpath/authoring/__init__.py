"""Authoring: writing the course and proving it, up to what learners get.

- `chapter`: a chapter as data (cells, exercises, variants) and its static checks;
- `requirements`: the requirement lists of the exercises (rendered into statements and tests, checked,
  REQUIREMENTS.md); `proofs`: what a successful validation leaves behind (its known mistakes);
- `validate`: run each chapter and prove its tests tell right from wrong; `mutate`, `mutants`: mutation testing;
- `release`, `appendix`, `path`: the student version, the reference-solutions appendix and self-study edition,
  LEARNING_PATH.md; `build`: validate, then all three;
- `drift`: the course rebuilt on another JAX stack and compared with the pinned build.

Running a notebook in a kernel (`jaxpath.execute`, `jaxpath.kernel`) is a shared leaf: grading uses it too.
Nothing here imports the grader, the classroom or the learner's side (pyproject.toml [tool.importlinter])."""
