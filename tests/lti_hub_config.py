# JupyterHub configuration for the fast LTI launch tests (tests/lti_hub.py): deploy/jupyterhub_config.py itself, as
# `jaxpath hub` runs it (with hub.toml's [lti]: the LTI authenticator), less what needs accounts and node: no
# formgrader services (they run as course accounts) and a proxy that routes nothing (the tests talk to the hub's
# own port). Nobody's server is started.
import os
import sys

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))
load_subconfig(os.path.join(here, "..", "deploy", "jupyterhub_config.py"))  # noqa: F821 (traitlets provides it)
sys.path.insert(0, here)
from lti_hub import NullProxy  # noqa: E402

c.JupyterHub.services = []
c.JupyterHub.load_roles = [r for r in c.JupyterHub.load_roles if "services" not in r]
c.JupyterHub.proxy_class = NullProxy
