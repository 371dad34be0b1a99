"""A small LTI 1.3 platform (an LMS as far as the protocol goes) for the tests, on loopback, written with PyJWT.

- its own RSA key, published at `/jwks` (a JWKS, as `jwks_url`);
- the OIDC launch: `launch_form(...)` is what an LMS's link does (a form posted to the tool's login initiation URL
  with iss, login_hint, target_link_uri, lti_message_hint, client_id, lti_deployment_id); the tool redirects the
  browser to `/auth`, which checks client_id and redirect_uri, signs an id_token with the launch's claims and the
  tool's nonce, and answers an auto-submitting form that posts id_token and state to the tool's redirect_uri.
  The launch (who, which course, which roles, and a fault: `bad-signature`, `expired`, a deployment id) travels in
  lti_message_hint, which the tool must hand back unaltered;
- `/token`: the OAuth2 client_credentials grant, whose JWT client assertion (RFC 7523) it verifies against the
  tool's public JWK (signature, iss = sub = client id, aud = this URL, exp, a jti used once), and the scopes;
- `/courses/<context>/lineitems` (AGS): list (filtered by resource_id and tag), create; `.../lineitems/<n>/scores`:
  record each score. Every request to them needs a token of this platform with the scope it needs.

Everything received is kept (`scores`, `lineitems`, `tokens`, `refused`) for the tests to read. The server runs in
a thread of the test process; `url` is known once it listens (port 0: the kernel picks a free one)."""
from __future__ import annotations

import html
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLAIM = "https://purl.imsglobal.org/spec/lti/claim"
AGS = "https://purl.imsglobal.org/spec/lti-ags"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk_of(key: rsa.RSAPrivateKey, kid: str) -> dict:
    return {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "alg": "RS256", "use": "sig"}


@dataclass
class Platform:
    client_id: str = "jaxpath-tool"
    deployment_id: str = "deployment-1"
    tool_jwk: dict | None = None
    """The tool's public key, as an LMS's registration form takes it."""
    tool_launch_url: str = ""
    """The tool's redirect (launch) URL the platform accepts in an authentication request."""
    tool_login_url: str = ""
    """The tool's login initiation URL, where the platform's link (`/launch`) sends the browser."""
    tool_target: str = ""
    """The target link URI of the platform's link."""
    key: rsa.RSAPrivateKey = field(default_factory=new_key)
    kid: str = "platform-key-1"
    page_size: int = 0
    """Line items per page of the container (0: all on one), the next page named by a Link header, as AGS does."""
    ignore_filters: bool = False
    """List every line item whatever resource_id and tag ask (a platform may)."""
    scores: list[dict] = field(default_factory=list)
    lineitems: list[dict] = field(default_factory=list)
    tokens: dict[str, set] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    _jtis: set = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- running --------------------------------------------------------------------------------------------
    def start(self) -> "Platform":
        platform = self

        class Handler(_Handler):
            pass

        Handler.platform = platform
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "Platform":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    @property
    def auth_url(self) -> str:
        return f"{self.url}/auth"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def lti_table(self, **extra: object) -> str:
        """hub.toml's `[lti]` table for this platform (its keys and URLs), with `extra` keys (`private_key`)."""
        lines = [f'issuer = "{self.issuer}"', f'client_id = "{self.client_id}"',
                 f'deployment_ids = ["{self.deployment_id}"]', f'jwks_url = "{self.jwks_url}"',
                 f'auth_url = "{self.auth_url}"', f'token_url = "{self.token_url}"']
        lines += [f'{key} = "{value}"' for key, value in extra.items()]
        return "[lti]\n" + "\n".join(lines) + "\n"

    def lineitems_url(self, context: str) -> str:
        return f"{self.url}/courses/{context}/lineitems"

    # -- what an LMS's link does -----------------------------------------------------------------------------
    def launch_form(self, login_url: str, target: str, *, sub: str, context: str, roles: list[str],
                    deployment: str | None = None, fault: str = "") -> dict:
        """The fields an LMS posts to the tool's login initiation URL (`login_url`) for this launch."""
        hint = json.dumps({"sub": sub, "context": context, "roles": roles, "fault": fault,
                           "deployment": deployment or self.deployment_id})
        return {"iss": self.issuer, "login_hint": sub, "target_link_uri": target, "lti_message_hint": hint,
                "client_id": self.client_id, "lti_deployment_id": deployment or self.deployment_id}

    def launch_page(self, login_url: str, target: str, **launch) -> str:
        """An LMS page whose form posts the login initiation by itself (what a browser gets from the LMS)."""
        return _autosubmit(login_url, self.launch_form(login_url, target, **launch))

    def link(self, *, sub: str, context: str, roles: list[str]) -> str:
        """The URL of an LMS link for this person in this course: the browser opens it and arrives in the tool."""
        return f"{self.url}/launch?" + urlencode({"sub": sub, "context": context, "roles": ",".join(roles)})

    def id_token(self, nonce: str, hint: dict, target: str) -> str:
        now = int(time.time())
        exp = now + 300
        key, kid = self.key, self.kid
        if hint["fault"] == "expired":
            now, exp = now - 400, now - 100
        if hint["fault"] == "bad-signature":
            key = new_key()  # the platform's key id, another key: what a forger without the platform's key makes
        context = hint["context"]
        claims = {
            "iss": self.issuer, "aud": self.client_id, "sub": hint["sub"], "iat": now, "exp": exp, "nonce": nonce,
            f"{CLAIM}/message_type": "LtiResourceLinkRequest", f"{CLAIM}/version": "1.3.0",
            f"{CLAIM}/deployment_id": hint["deployment"], f"{CLAIM}/target_link_uri": target,
            f"{CLAIM}/resource_link": {"id": f"link-{context}"}, f"{CLAIM}/roles": hint["roles"],
            f"{CLAIM}/context": {"id": context, "label": context.upper(), "title": f"Course {context}"},
            f"{AGS}/claim/endpoint": {"scope": [f"{AGS}/scope/lineitem", f"{AGS}/scope/score"],
                                      "lineitems": self.lineitems_url(context)},
        }
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})

    # -- the token endpoint ------------------------------------------------------------------------------------
    def grant(self, form: dict) -> tuple[int, dict]:
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != ASSERTION_TYPE:
            return 400, {"error": "unsupported_grant_type"}
        try:
            key = jwt.PyJWK(self.tool_jwk).key
            claims = jwt.decode(form.get("client_assertion", ""), key, algorithms=["RS256"], audience=self.token_url,
                                issuer=self.client_id, options={"require": ["exp", "iat", "jti", "sub"]})
        except jwt.PyJWTError as e:
            self.refused.append(f"token: {e}")
            return 401, {"error": "invalid_client", "error_description": str(e)}
        with self._lock:
            if claims["sub"] != self.client_id or claims["jti"] in self._jtis:
                self.refused.append("token: sub or a used jti")
                return 401, {"error": "invalid_client"}
            self._jtis.add(claims["jti"])
            token = secrets.token_urlsafe(24)
            self.tokens[token] = set(form.get("scope", "").split())
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                     "scope": " ".join(sorted(self.tokens[token]))}


def _autosubmit(url: str, fields: dict) -> str:
    inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items())
    return (f'<!DOCTYPE html><html><body><form id="lti" method="post" action="{html.escape(url)}">{inputs}'
            '</form><script>document.getElementById("lti").submit()</script></body></html>')


class _Handler(BaseHTTPRequestHandler):
    platform: Platform

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body, content_type: str = "application/json", headers: dict | None = None) -> None:
        data = (json.dumps(body) if not isinstance(body, str) else body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _scope(self, needed: str) -> bool:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        scopes = self.platform.tokens.get(token)
        if scopes is None or f"{AGS}/scope/{needed}" not in scopes:
            self.platform.refused.append(f"{self.command} {self.path}: no token with the {needed} scope")
            self._send(401, {"error": "unauthorized"})
            return False
        return True

    def do_GET(self) -> None:
        p = self.platform
        u = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/launch":
            return self._send(200, p.launch_page(p.tool_login_url, p.tool_target, sub=q["sub"], context=q["context"],
                                                 roles=q["roles"].split(",")), "text/html")
        if u.path == "/jwks":
            return self._send(200, {"keys": [jwk_of(p.key, p.kid)]})
        if u.path == "/auth":
            # the tool's OIDC authentication request (LTI security 1.0, 5.1.1.2)
            if q.get("client_id") != p.client_id or q.get("redirect_uri") != p.tool_launch_url \
                    or q.get("response_type") != "id_token" or q.get("scope") != "openid":
                p.refused.append(f"auth: {q}")
                return self._send(400, {"error": "invalid_request"})
            hint = json.loads(q["lti_message_hint"])
            token = p.id_token(q["nonce"], hint, q.get("target_link_uri", p.tool_launch_url))
            return self._send(200, _autosubmit(q["redirect_uri"], {"id_token": token, "state": q["state"]}),
                              "text/html")
        if u.path.endswith("/lineitems"):
            if not self._scope("lineitem"):
                return
            items = [li for li in p.lineitems if li["id"].startswith(f"{p.url}{u.path}/")
                     and (p.ignore_filters or all(li.get(k) == q[f] for f, k in (("resource_id", "resourceId"),
                                                                                  ("tag", "tag")) if f in q))]
            link = None
            if p.page_size:
                start = int(q.get("page", 0))
                if start + p.page_size < len(items):
                    link = f'<{p.url}{u.path}?{urlencode({**q, "page": start + p.page_size})}>; rel="next"'
                items = items[start:start + p.page_size]
            return self._send(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json",
                              {"Link": link} if link else None)
        self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        p = self.platform
        u = urlsplit(self.path)
        if u.path == "/token":
            form = {k: v[0] for k, v in parse_qs(self._body().decode()).items()}
            return self._send(*p.grant(form))
        if u.path.endswith("/lineitems"):
            if not self._scope("lineitem"):
                return
            body = json.loads(self._body())
            with p._lock:
                item = {**body, "id": f"{p.url}{u.path}/{len(p.lineitems) + 1}"}
                p.lineitems.append(item)
            return self._send(201, item, "application/vnd.ims.lis.v2.lineitem+json")
        if u.path.endswith("/scores"):
            if not self._scope("score"):
                return
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                return self._send(415, {"error": "not a score"})
            lineitem = f"{p.url}{u.path.removesuffix('/scores')}"
            if not any(li["id"] == lineitem for li in p.lineitems):
                return self._send(404, {"error": "no such line item"})
            with p._lock:
                p.scores.append({**json.loads(self._body()), "lineitem": lineitem})
            return self._send(204, "")
        self._send(404, {"error": "not found"})


def new_uuid() -> str:
    return str(uuid.uuid4())
