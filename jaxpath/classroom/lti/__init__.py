"""Grades back to the LMS (LTI 1.3 Assignment and Grade Services): `jaxpath lti push PART`.

    settings = load_settings("deploy/hub.toml")        # [lti] and the course's lti_lineitems
    print_plan(plan(config, "basics", settings))        # what would be sent (--dry-run)
    report = push(config, "basics", settings)           # line items made when missing, each new score posted

`push` is the API, `jaxpath/cli/lti.py` the command; the launch into the hub is jaxpath/classroom/hub/lti.py."""
from __future__ import annotations

from .push import LtiPushError, PushPlan, PushReport, plan, public_jwk, push, read_private_key

__all__ = ["LtiPushError", "PushPlan", "PushReport", "plan", "public_jwk", "push", "read_private_key"]
