"""The hub's LTI 1.3 launch (deploy/hub.toml's `[lti]`): JupyterHub's own `LTI13Authenticator`
(jupyterhub-ltiauthenticator 1.6.3), with what it lacks for a course hub added in a subclass.

What the library verifies on each launch (ltiauthenticator/lti13/handlers.py and validator.py):

- the login initiation carries `iss`, `login_hint` and `target_link_uri`;
- the launch's OIDC `state` equals the one it put in an encrypted cookie at login initiation (CSRF);
- the id_token's signature, against the platform's JWKS (fetched from `jwks_url`; RS256 only), its `exp`, its
  `iss` (the configured issuer), its `aud` (the client id; `azp` when there are several audiences);
- the required LTI claims (version 1.3.0, the message type, a deployment id, roles, the resource link's id) and
  an `iat` at most 600 s old;
- the `nonce`: the hash of a random value it keeps in a cookie, which it clears once read.

What it does not, and `JaxpathLTIAuthenticator` adds:

- **a nonce is used once**: the hub remembers every accepted id_token's nonce until the token could no longer be
  accepted anyway (its `exp`, and the library's 600 s on `iat`), and refuses it a second time. The library's
  cookie check alone lets a copy of the form and its cookies be posted again until the token expires;
- **the deployment id** must be one of `deployment_ids` (the library only checks there is one);
- **who, where, as what**: the LMS user (the `sub` claim) is mapped to a hub account by `[lti.users]`, the LMS
  course (the context claim's `id`) to a course by its `lti_context`, and the LMS role to student, grader or
  instructor (`ROLES`); that must be the account's role in the course's roster in hub.toml, which stays the
  authority (`jaxpath hub` gave staff their groups and the course directory from it);
- **every refusal is a page** (templates/lti-refused.html.j2) that says why and what to do, with the ids an
  administrator needs, and a warning in the hub's log (`LTI launch refused (<why>): ...`).

The hub's groups (`nbgrader-<course>` of the students, `formgrade-<course>` of the staff) are the ones
deploy/jupyterhub_config.py makes from the roster, as with PAM."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import InvalidAudienceError, ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from tornado.web import HTTPError
from traitlets import Dict, Int, Set, Unicode

CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
ROLES = [  # the first that a launch's roles contain wins: a teaching assistant is also sent as an Instructor
    (f"{MEMBERSHIP}/Instructor#TeachingAssistant", "grader"),
    (f"{MEMBERSHIP}#Instructor", "instructor"),
    (f"{MEMBERSHIP}#Learner", "student"),
]
"""LTI 1.3 context role URIs (LTI 1.3 spec, A.2.2) -> the role in the course. Institution and system roles
(`.../institution/person#...`, `.../system/person#...`) say nothing about this course and are ignored."""


@dataclass
class Refused(Exception):
    """A launch the hub does not accept: `why` (a short code, in the log), `reason` and `todo` (the page's
    sentences), `status` (HTTP) and what the administrator needs to know (`details`)."""
    why: str
    reason: str
    todo: str
    status: int = 403
    details: dict | None = None

    def __str__(self) -> str:
        return f"{self.why}: {self.reason}"


def role_of(roles: list[str]) -> str | None:
    for uri, role in ROLES:
        if uri in roles:
            return role
    return None


def library_refusal(e: Exception) -> Refused:
    """The library's ValidationError or HTTPError (400/401), as a page that says what it means."""
    text = e.log_message if isinstance(e, HTTPError) else str(e)
    text = text or str(e)
    low = text.lower()
    if "signature has expired" in low or "too long ago" in low:
        return Refused("expired", "The LMS's launch message has expired.",
                       "Go back to the LMS and open the link again (a launch is valid for a few minutes).", 400,
                       {"library": text})
    if "signature verification failed" in low or "unable to find a signing key" in low or "invalid crypto" in low:
        return Refused("signature", "The launch message is not signed by the LMS this hub trusts.",
                       "Ask the hub's administrator: the platform's keyset URL (jwks_url) may be wrong, or the "
                       "message did not come from the LMS.", 401, {"library": text})
    if isinstance(e, InvalidAudienceError) or "audience" in low:
        return Refused("audience", "The launch is for another tool (its client id is not this hub's).",
                       "Ask the hub's administrator to check the client id in the hub's settings.", 401,
                       {"library": text})
    if "nonce" in low or "state" in low:
        return Refused("session", "The launch does not belong to a login this browser started.",
                       "Open the link in the LMS again, in the same browser (cookies must be allowed for the hub).",
                       400, {"library": text})
    return Refused("invalid", "The LMS's launch message is not one the hub can accept.",
                   "Open the link in the LMS again; if this page comes back, tell the hub's administrator.", 400,
                   {"library": text})


class JaxpathLTIAuthenticator(LTI13Authenticator):
    """LTI13Authenticator plus: a nonce used once, the deployment checked, the LMS user, course and role mapped to
    an account of the course's roster (see the module's text)."""

    deployment_ids = Set(Unicode(), config=True, help="The platform's deployment ids this hub accepts.")
    users = Dict(config=True, help="The LMS user id (the id_token's `sub`) -> the hub account.")
    courses = Dict(config=True, help="The LMS context id -> {'id', 'instructors', 'graders', 'students'}.")
    nonce_lifetime = Int(600, config=True, help="The library's limit on an id_token's age (its `max_age`).")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._seen: dict[str, float] = {}

    def get_handlers(self, app):
        handlers = super().get_handlers(app)
        ours = {self.callback_handler: LaunchHandler, self.login_handler: LoginInitHandler}
        return [(url, ours.get(handler, handler)) for url, handler in handlers]

    def check_nonce_unused(self, id_token: dict) -> None:
        """Refuse an id_token whose nonce was accepted before; remember this one until the token expires."""
        now = time.time()
        self._seen = {n: until for n, until in self._seen.items() if until > now}
        nonce = id_token.get("nonce")
        if nonce in self._seen:
            raise Refused("replay", "This launch message was used before.",
                          "Open the link in the LMS again: each launch can be used once.", 403,
                          {"nonce": nonce, "LMS user": id_token.get("sub", "")})
        until = max(float(id_token.get("exp", 0)), float(id_token.get("iat", now)) + self.nonce_lifetime) + 60
        self._seen[nonce] = until

    def admit(self, id_token: dict) -> dict:
        """Who the launch is, in which course, as what: {'account', 'course', 'role'}; Refused otherwise."""
        sub = id_token.get("sub") or ""
        context = (id_token.get(CONTEXT_CLAIM) or {}).get("id") or ""
        deployment = id_token.get(DEPLOYMENT_CLAIM, "")
        roles = id_token.get(ROLES_CLAIM) or []
        details = {"LMS user": sub, "LMS course": context, "deployment": deployment}
        if deployment not in self.deployment_ids:
            raise Refused("deployment", "This LMS deployment of the tool is not one the hub accepts.",
                          "Ask the hub's administrator to add the deployment id below to the hub's settings "
                          "([lti] deployment_ids), or to use the registered one.", 403, details)
        account = self.users.get(sub)
        if not account:
            raise Refused("unknown-user", "Your LMS account is not linked to an account of this hub.",
                          "Send the LMS user id below to the hub's administrator, who adds it to the hub's settings "
                          "([lti.users]).", 403, details)
        details["account"] = account
        course = self.courses.get(context)
        if course is None:
            raise Refused("unknown-course", "This LMS course is not a course of this hub.",
                          "Ask the hub's administrator to set the LMS course id below as the course's lti_context.",
                          403, details)
        details["course"] = course["id"]
        role = role_of(roles)
        if role is None:
            raise Refused("no-role", "The LMS gives you no role in this course (learner, teaching assistant or "
                          "instructor).", "Ask the course's instructor to enrol you in the LMS course.", 403,
                          {**details, "roles": ", ".join(roles)})
        roster = next((r for r, key in (("instructor", "instructors"), ("grader", "graders"),
                                        ("student", "students")) if account in course.get(key, [])), None)
        if roster is None:
            raise Refused("not-enrolled", f"Your account ({account}) is not in the roster of {course['id']} on this hub.",
                          "Ask the hub's administrator to add you to the course's roster.", 403, details)
        if roster != role:
            raise Refused("role", f"In this course the LMS has you as {role}; the hub's roster has you as {roster}.",
                          "Ask the hub's administrator: the roster in the hub's settings decides, and the two must "
                          "agree.", 403, details)
        ags = id_token.get(AGS_CLAIM) or {}
        if role == "instructor" and ags.get("lineitems"):
            self.log.info("LTI: course %s's AGS line items (lti_lineitems for jaxpath lti push): %s", course["id"],
                          ags["lineitems"])
        return {"account": account, "course": course["id"], "role": role}

    def get_username(self, token: dict) -> str:
        return self.users[token["sub"]]

    async def authenticate(self, handler, data=None):
        return {"name": self.get_username(data or {})}


class LoginInitHandler(LTI13LoginInitHandler):
    """The library's login initiation, with its state and nonce cookies sent back on the launch across sites: the
    launch is a form the LMS's page posts to the hub, a cross-site POST, which carries no cookie that is
    SameSite=Lax (browsers' default). On https they are SameSite=None (browsers take that only with Secure); the
    hub's own login cookie stays as JupyterHub sets it. Only a launch from an LMS on another site shows the need:
    the test platform is on the same host."""

    def post(self):
        """The library's login initiation; someone who opens the hub directly (no `iss`: not sent by an LMS) gets
        a page that sends them to the LMS instead of the library's bare 400."""
        if not self.get_argument("iss", None):
            refuse(self, Refused("not-from-the-lms", "This hub is entered from the LMS.",
                                 "Open the hub's link in your course in the LMS.", 400))
            return
        return super().post()

    get = post

    def _set_oauth_cookie(self, key: str, value) -> None:
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, **cross_site(self))


def cross_site(handler) -> dict:
    """The cookie attributes of the launch's state and nonce cookies (see LoginInitHandler)."""
    public = handler.settings.get("public_url")
    https = (public.scheme if public else handler.request.protocol) == "https"
    return {"samesite": "None", "secure": True} if https else {}


class LaunchHandler(LTI13CallbackHandler):
    """The launch (the platform's form post of id_token and state): the library's checks, then ours; a
    refusal is a page and a log line."""

    def _get_oauth_cookie(self, name: str):
        """The library's, clearing the cookie with the attributes it was set with (a SameSite=None cookie is
        cleared only so)."""
        cookie = (self.get_secure_cookie(name) or b"").decode("utf8", "replace")
        self.clear_cookie(name, **cross_site(self))
        return cookie

    def decode_and_validate_launch_request(self) -> dict:
        id_token = super().decode_and_validate_launch_request()
        self.authenticator.check_nonce_unused(id_token)
        return id_token

    async def post(self):
        try:
            try:
                id_token = self.decode_and_validate_launch_request()
            except (ValidationError, HTTPError) as e:
                if isinstance(e, HTTPError) and e.status_code >= 500:
                    raise
                raise library_refusal(e) from e
            launch = self.authenticator.admit(id_token)
            user = await self.login_user(id_token)
            if user is None:
                raise Refused("not-allowed", "The hub does not let this account in.",
                              "Ask the hub's administrator.", 403, {"account": launch["account"]})
        except Refused as refusal:
            refuse(self, refusal)
            return
        self.log.info("LTI launch: %s as %s of %s", launch["account"], launch["role"], launch["course"])
        await self.redirect_to_next_url(user)


def refuse(handler, refusal: Refused) -> None:
    """The refusal page (templates/lti-refused.html.j2) and the log line."""
    from ...templates import template

    details = {k: v for k, v in (refusal.details or {}).items() if v}
    handler.log.warning("LTI launch refused (%s): %s %s", refusal.why, refusal.reason,
                        " ".join(f"{k}={v!r}" for k, v in details.items()))
    handler.set_status(refusal.status)
    handler.set_header("Content-Type", "text/html; charset=utf-8")
    handler.finish(template("lti-refused.html.j2").render(refusal=refusal, details=details))


__all__ = ["JaxpathLTIAuthenticator", "LaunchHandler", "LoginInitHandler", "ROLES", "Refused", "library_refusal", "refuse",
           "role_of"]
