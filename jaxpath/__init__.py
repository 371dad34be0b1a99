"""jaxpath: validate, release and publish the JAX path course; the Python API behind the `jaxpath` CLI."""
from .startup import defer_iri_grammar

defer_iri_grammar()  # before anything imports nbformat: 0.9 s less per process (startup.py)

from .authoring.validate import validate  # noqa: E402
from .config import Config  # noqa: E402
from .manifest import load_manifest  # noqa: E402

__all__ = ["Config", "load_manifest", "validate"]
