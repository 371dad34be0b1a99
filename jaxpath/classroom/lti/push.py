"""`jaxpath lti push PART`: each student's score for each notebook of PART, as `jaxpath export` counts it (late
penalties and extensions applied: `export.notebook_scores`), posted to the LMS line item of that notebook through
LTI Assignment and Grade Services (AGS 2.0).

- **Access**: an OAuth2 token from the platform's token URL (client_credentials grant), obtained with a JWT client
  assertion signed by the tool's private key (RFC 7523; the LTI security framework's "client_credentials with
  JWT"), scopes `lineitem` and `score`. The key is read from the file hub.toml's `[lti] private_key` names, which
  must be readable by its owner only (0600 or 0400) and lie outside the course directory; never from the command
  line.
- **Line items**: one per notebook, found by its `resourceId` (`<part>/<notebook>`) and `tag` (`jaxpath`) in
  the course's line items (`lti_lineitems`), created when missing, so a rerun finds the same ones.
- **Idempotent and resumable, by a local record**: `<build>/lti/<course>-<part>.json`, rewritten atomically
  after each score the LMS accepts (and each line item made). A rerun sends only the scores that are not in it
  or that changed (a regrade); when nothing is pending it contacts nothing. A record rather than the LMS's result
  service: AGS does not promise that a result reads back as the score sent (platforms scale and round it, and an
  instructor's override in the LMS is a result too), and a record needs no extra scope. What it cannot know: a
  push killed after the LMS accepted a score but before the record was renamed sends that score again on the
  rerun (the same value, a later timestamp: AGS keeps the latest, so the LMS's grade does not change).
- **Held back**: a notebook whose grading did not finish (timed out, crashed, invalid, tampered: its score is
  partial or in question) is not sent until it is graded again, nor a student with no LMS user in `[lti.users]`;
  both are listed. A notebook not handed in scores 0 and is sent, as `export` writes it.

`--dry-run` (`plan`) contacts nothing and shows what would be sent."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ...config import Config
from ...errors import JaxpathError
from ...faults import checkpoint
from ...files import write_atomic
from ..export import notebook_scores
from ..hub.settings import HubSettings, HubSettingsError

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope"
SCOPES = (f"{AGS}/lineitem", f"{AGS}/score")
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
TAG = "jaxpath"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TIMEOUT = 60
"""Seconds one request to the LMS may take (a guard against a hang, not a measure)."""


SENDABLE = ("", "graded", "missing", "not submitted")
"""The notebook statuses whose score is final: graded, or nothing handed in (0). "": graded without jaxpath."""


class LtiPushError(JaxpathError):
    """The push cannot go on (settings, the key, the LMS refused a request); what was accepted is in the record."""


@dataclass
class Item:
    notebook: str
    student: str
    user_id: str | None
    score: float
    max_score: float
    state: str
    """'send', 'sent' (the record has this score), 'held' (reason), 'no LMS user'."""
    reason: str = ""


@dataclass
class PushPlan:
    part: str
    course: str
    record: Path
    lineitems: dict[str, str | None]
    """notebook -> its recorded line item URL (None: to be found or made)."""
    items: list[Item]
    max_scores: dict[str, float] = field(default_factory=dict)

    @property
    def pending(self) -> list[Item]:
        return [i for i in self.items if i.state == "send"]


@dataclass
class PushReport:
    plan: PushPlan
    sent: list[Item] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    """The notebooks whose line item this run made."""


def _course(settings: HubSettings, config: Config, course_id: str | None):
    if settings.lti is None:
        raise LtiPushError(f"{settings.path}: no [lti] table: the LMS platform (issuer, client_id, token_url, "
                           "private_key) is not set up")
    try:
        course = settings.course(course_id or config.coursedir().course_id)
    except HubSettingsError as e:
        raise LtiPushError(f"{e} (--course names another)") from None
    if not course.lti_lineitems:
        raise LtiPushError(f"{settings.path}: course {course.id!r}: `lti_lineitems` is missing (the LMS course's AGS "
                           "line items URL; the hub logs it when an instructor launches)")
    return course


def record_path(config: Config, course: str, part: str) -> Path:
    return config.build / "lti" / f"{course}-{part}.json"


def _read_record(path: Path, settings: HubSettings, lineitems_url: str) -> dict:
    platform = {"issuer": settings.lti.issuer, "client_id": settings.lti.client_id, "lineitems": lineitems_url}
    empty = {"platform": platform, "lineitems": {}, "scores": {}}
    if not path.exists():
        return empty
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LtiPushError(f"{path}: the push record is unreadable ({e}); move it away to send every score again") from None
    if data.get("platform") != platform:
        return empty  # another platform or course: its record says nothing about this one
    return data


def _key(notebook: str, user_id: str) -> str:
    return f"{notebook}/{user_id}"


def plan(config: Config, part: str, settings: HubSettings, *, course_id: str | None = None,
         db_url: str | None = None) -> PushPlan:
    """What a push would send, from the gradebook and the record: contacts nothing."""
    course = _course(settings, config, course_id)
    path = record_path(config, course.id, part)
    record = _read_record(path, settings, course.lti_lineitems)
    items, max_scores = [], {}
    for s in notebook_scores(config, part, db_url=db_url):
        max_scores[s.notebook] = s.max_score
        user = settings.lti.sub_of(s.student)
        if user is None:
            items.append(Item(s.notebook, s.student, None, s.score, s.max_score, "no LMS user",
                              "not in [lti.users]"))
        elif s.status not in SENDABLE:
            items.append(Item(s.notebook, s.student, user, s.score, s.max_score, "held",
                              f"{s.status}" + (f" ({s.reason})" if s.reason else "")))
        else:
            sent = record["scores"].get(_key(s.notebook, user))
            items.append(Item(s.notebook, s.student, user, s.score, s.max_score,
                              "sent" if sent is not None and float(sent) == s.score else "send"))
    return PushPlan(part, course.id, path, {nb: record["lineitems"].get(nb) for nb in max_scores}, items, max_scores)


# -- the tool's key -------------------------------------------------------------------------------------------

def read_private_key(path: Path | None, settings_path: Path, course_root: Path | None = None):
    """The tool's RSA private key, from a file only its owner may read, outside the course directory."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    if path is None:
        raise LtiPushError(f"{settings_path}: [lti] `private_key` is missing (the file with the tool's private key, "
                           "whose public half the LMS has)")
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise LtiPushError(f"{path}: no such key file ({settings_path}: [lti] private_key)") from None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise LtiPushError(f"{path}: the tool's private key has mode {mode:04o}: group or others may read it. "
                           f"`chmod 600 {path}` (and keep it out of any repository)")
    if course_root is not None and path.resolve().is_relative_to(Path(course_root).resolve()):
        raise LtiPushError(f"{path}: the tool's private key is inside the course directory {course_root}, from where "
                           "it could be committed or copied: keep it elsewhere (e.g. /etc/jaxpath/)")
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as e:
        raise LtiPushError(f"{path}: not an unencrypted PEM private key ({e})") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise LtiPushError(f"{path}: not an RSA key (LTI 1.3 signs with RS256)")
    return key


def public_jwk(key) -> dict:
    """The key's public half as a JWK (what the LMS is given), with its RFC 7638 thumbprint as the key id."""
    from jwt.algorithms import RSAAlgorithm

    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


# -- the LMS ----------------------------------------------------------------------------------------------------

class Platform:
    """AGS calls to one LMS, with one access token (obtained on first use)."""

    def __init__(self, settings: HubSettings, key, session=None):
        import requests

        self.lti = settings.lti
        self.settings_path = settings.path
        self.key = key
        self.kid = public_jwk(key)["kid"]
        self.http = session or requests.Session()
        self._token: str | None = None

    def _fail(self, what: str, r) -> LtiPushError:
        return LtiPushError(f"{what}: the LMS answered {r.status_code} ({r.text[:300].strip()}) at {r.url}")

    def token(self) -> str:
        if self._token:
            return self._token
        import jwt

        if not self.lti.token_url:
            raise LtiPushError(f"{self.settings_path}: [lti] `token_url` is missing (the platform's OAuth2 token URL)")
        now = int(time.time())
        assertion = jwt.encode({"iss": self.lti.client_id, "sub": self.lti.client_id, "aud": self.lti.token_url,
                                "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex},
                               self.key, algorithm="RS256", headers={"kid": self.kid})
        r = self.http.post(self.lti.token_url, timeout=TIMEOUT, data={
            "grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion, "scope": " ".join(SCOPES)})
        if r.status_code != 200:
            raise self._fail("the access token", r)
        self._token = r.json()["access_token"]
        return self._token

    def _headers(self, **extra) -> dict:
        return {"Authorization": f"Bearer {self.token()}", **extra}

    def find_lineitem(self, lineitems: str, resource_id: str) -> str | None:
        """The line item of this resource id and tag. The filter is asked of the LMS and applied here again (a
        platform may ignore it), across every page of the container (AGS pages it with Link: rel="next")."""
        url, params = lineitems, {"resource_id": resource_id, "tag": TAG}
        while url:
            r = self.http.get(url, params=params, timeout=TIMEOUT, headers=self._headers(Accept=LINEITEMS))
            if r.status_code != 200:
                raise self._fail(f"the line items of {resource_id}", r)
            found = [li for li in r.json() if li.get("resourceId") == resource_id and li.get("tag", TAG) == TAG]
            if found:
                return found[0]["id"]
            url, params = r.links.get("next", {}).get("url"), None
        return None

    def create_lineitem(self, lineitems: str, resource_id: str, label: str, maximum: float) -> str:
        body = {"scoreMaximum": maximum, "label": label, "resourceId": resource_id, "tag": TAG}
        r = self.http.post(lineitems, data=json.dumps(body), timeout=TIMEOUT,
                           headers=self._headers(**{"Content-Type": LINEITEM, "Accept": LINEITEM}))
        if r.status_code not in (200, 201):
            raise self._fail(f"making the line item {resource_id}", r)
        return r.json()["id"]

    def post_score(self, lineitem: str, user_id: str, score: float, maximum: float) -> None:
        u = urlsplit(lineitem)  # the scores endpoint is the line item's URL with /scores after its path
        url = urlunsplit(u._replace(path=u.path.rstrip("/") + "/scores"))
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        body = {"userId": user_id, "scoreGiven": score, "scoreMaximum": maximum, "activityProgress": "Completed",
                "gradingProgress": "FullyGraded", "timestamp": stamp}
        r = self.http.post(url, data=json.dumps(body), timeout=TIMEOUT,
                           headers=self._headers(**{"Content-Type": SCORE}))
        if r.status_code not in (200, 201, 204):
            raise self._fail(f"the score of {user_id}", r)


def push(config: Config, part: str, settings: HubSettings, *, course_id: str | None = None,
         db_url: str | None = None, session=None) -> PushReport:
    """Send what `plan` says is pending: line items found or made, then each score, the record rewritten after each
    one the LMS accepted (see the module's text)."""
    the_plan = plan(config, part, settings, course_id=course_id, db_url=db_url)
    report = PushReport(the_plan)
    if not the_plan.pending:
        return report
    course = settings.course(the_plan.course)
    key = read_private_key(settings.lti.private_key, settings.path, config.root)
    lms = Platform(settings, key, session)
    record = _read_record(the_plan.record, settings, course.lti_lineitems)

    def save() -> None:
        write_atomic(the_plan.record, json.dumps(record, indent=1, sort_keys=True))

    lineitems = {}
    for notebook in sorted({i.notebook for i in the_plan.pending}):
        url = record["lineitems"].get(notebook)
        if url is None:
            resource = f"{part}/{notebook}"
            url = lms.find_lineitem(course.lti_lineitems, resource)
            if url is None:
                url = lms.create_lineitem(course.lti_lineitems, resource, f"{part}: {notebook}",
                                          the_plan.max_scores[notebook])
                report.created.append(notebook)
            record["lineitems"][notebook] = url
            save()
        lineitems[notebook] = url
    for item in the_plan.pending:
        lms.post_score(lineitems[item.notebook], item.user_id, item.score, item.max_score)
        record["scores"][_key(item.notebook, item.user_id)] = item.score
        save()
        report.sent.append(item)
        checkpoint("lti-score-sent")
    return report


def make_key(path: Path):
    """A new 2048-bit RSA key for the tool, written 0600 (never over an existing file); the key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = Path(path)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LtiPushError(f"{path}: exists already; a key is made once (remove it first to make another)") from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key


__all__ = ["LtiPushError", "Platform", "PushPlan", "PushReport", "make_key", "plan", "public_jwk", "push",
           "read_private_key", "record_path"]
