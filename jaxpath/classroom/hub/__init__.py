"""The course on a JupyterHub on one server (`jaxpath hub`, `make hub`): real accounts, nbgrader's exchange and
its permissions, the Assignments tab for students, each course's formgrader as a hub service for its staff.

    settings = load_settings("deploy/hub.toml")
    prepared = prepare(settings, create_accounts=True)   # accounts, course directories, exchange, hub.json
    with Hub(prepared) as hub:                           # jupyterhub, its proxy and the formgrader services
        print(hub.url)

`settings` reads the settings file, `accounts` makes and removes the accounts, `setup` lays out what the hub
needs on disk, `process` runs it; `deploy/jupyterhub_config.py` is the JupyterHub configuration itself."""
from __future__ import annotations

from .accounts import remove_created
from .process import Hub, describe
from .settings import Course, HubSettings, HubSettingsError, LtiSettings, load_settings
from .setup import HubSetupError, Prepared, prepare

__all__ = ["Course", "Hub", "HubSettings", "HubSettingsError", "HubSetupError", "LtiSettings", "Prepared", "describe",
           "load_settings", "prepare", "remove_created"]
