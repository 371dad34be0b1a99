"""Run as a cell in a chapter's kernel: prints one line, __JAXPATH_STAMP__{json}, with what the notebook
ran on (versions of the stack, Python, platform, backend and device count, the date)."""


def __jaxpath_stamp():
    import datetime
    import importlib.metadata as md
    import json
    import platform
    import sys

    out = {"python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    for pkg in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "nbgrader"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    if "jax" in sys.modules:
        jax = sys.modules["jax"]
        out["backend"] = jax.default_backend()
        out["devices"] = len(jax.devices())
    print("__JAXPATH_STAMP__" + json.dumps(out))


__jaxpath_stamp()
del __jaxpath_stamp
