"""Synthetic students for grading tests (the helpers live in jaxpath.classroom.sample, which `make` uses too)."""
from jaxpath.classroom.sample import answers_from_source, submission, submit  # noqa: F401
