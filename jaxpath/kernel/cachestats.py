"""Counting the compilations a grading kernel reads from the persistent cache. The worker sends this file
as a cell, then `__jaxpath_cache_stats(); del __jaxpath_cache_stats`; the counts are read back later from
`sys.modules['_jaxpath_cache']` in an execute reply. Informational only (how many notebooks the warmed
cache served): nothing is decided on it."""


def __jaxpath_cache_stats():
    import sys
    import types

    import jax.monitoring

    st = types.ModuleType("_jaxpath_cache")
    st.hits, st.requests = 0, 0

    def on_event(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            st.hits += 1
        elif event == "/jax/compilation_cache/compile_requests_use_cache":
            st.requests += 1

    jax.monitoring.register_event_listener(on_event)
    sys.modules["_jaxpath_cache"] = st
