"""The classroom: running a class around the grader, before and after `jaxpath grade`.

- `collect`: an LMS zip of submissions into submitted/, mapped by a roster; `extend`: due-date extensions;
- `feedback`: a student's feedback page; `export`: grades CSV and a Canvas gradebook; `report`: the class report;
- `similar`, `clusters` (both on `classwide`): answers that share code, answers grouped by behaviour;
- `sample`: a small synthetic class, graded in a scratch copy of the course (what `make` ends with);
- `hub`: the course on a JupyterHub (accounts, the exchange, the formgrader services).

It builds on the grader (jaxpath.grade) and on the course as authored (jaxpath.authoring); nothing here knows
the learner's side (pyproject.toml [tool.importlinter])."""
