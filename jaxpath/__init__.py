"""jaxpath: validate, release and publish the JAX path course; the Python API behind the `jaxpath` CLI."""
from .config import Config
from .manifest import load_manifest
from .validate import validate

__all__ = ["Config", "load_manifest", "validate"]
