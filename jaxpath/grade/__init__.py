"""Batch grading: a coordinator that prepares and records, Dask workers that execute in a sandbox."""
from ..errors import GradeError
from .batch import grade
from .coordinator import GradeReport
from .limits import Limits
from .sandbox import SandboxUnavailable, sandbox_problem

__all__ = ["grade", "GradeReport", "GradeError", "Limits", "SandboxUnavailable", "sandbox_problem"]
