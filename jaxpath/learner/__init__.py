"""The learner's side: what a student reads and runs.

- `site`: the course site, a static HTML book made from the executed chapters (`jaxpath site`);
- `check`: run a notebook like nbgrader's Validate and say, per exercise, whether its self-check passes;
- `progress`: the track chapters a work folder has earned from `check`'s records;
- `serve`: the built site on a loopback port, with that progress.

It builds on the course as authored (jaxpath.authoring); it never needs the grader or the classroom
(pyproject.toml [tool.importlinter])."""
