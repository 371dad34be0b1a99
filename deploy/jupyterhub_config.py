# JupyterHub configuration of the course's hub: `jaxpath hub` (or `make hub`) prepares the accounts, the course
# directories and the exchange, writes $JAXPATH_HUB_STATE/hub.json from deploy/hub.toml, then runs
# `jupyterhub -f deploy/jupyterhub_config.py` as root. Everything below is plain JupyterHub and nbgrader
# configuration (nbgrader's reference setups: demos/demo_one_class_multiple_graders and demo_multiple_classes);
# hub.json only supplies the names, ports and paths of this server.
#
# Who is who: people log in with their own OS accounts (PAM), or arrive from the LMS (LTI 1.3, with hub.toml's [lti]),
# and their servers run as them (LocalProcessSpawner).
# Per course, a hub group `nbgrader-<course>` of its students (nbgrader's JupyterHubAuthPlugin reads it: a
# student lists, fetches and submits only the courses they are in), a group `formgrade-<course>` of its
# instructors and graders (they may open the course's formgrader), and the formgrader itself as a hub service
# named after the course, run by the account that owns the course directory.
import json
import os
import shutil
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

state = Path(os.environ.get("JAXPATH_HUB_STATE", "/srv/jaxpath-hub"))
hub = json.loads((state / "hub.json").read_text())
ports = hub["ports"]
sh = shutil.which("sh") or "/bin/sh"

# -- the hub and its proxy, on loopback but for the public address --------------------------------------------
c.JupyterHub.bind_url = hub["url"]
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{ports['hub']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{ports['proxy_api']}"
c.ConfigurableHTTPProxy.command = hub["proxy"]  # deploy/node_modules (npm ci --prefix deploy)
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started

# -- accounts: PAM, only the people of the courses; or, with hub.toml's [lti], LTI 1.3 launches from the LMS ----
c.Authenticator.allowed_users = set(hub["people"])
lti = hub.get("lti")
if lti is None:
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.open_sessions = False
else:
    # JupyterHub's LTI13Authenticator (jupyterhub-ltiauthenticator) and what jaxpath adds to it (a nonce used once,
    # the deployment id, the LMS user, course and role mapped onto the roster): jaxpath/classroom/hub/lti.py.
    # The LMS posts its launches to <url>/hub/lti13/oauth_login (login initiation) and /hub/lti13/oauth_callback.
    c.JupyterHub.authenticator_class = "jaxpath.classroom.hub.lti.JaxpathLTIAuthenticator"
    a = c.JaxpathLTIAuthenticator
    a.issuer = lti["issuer"]
    a.client_id = {lti["client_id"]}
    a.jwks_endpoint = lti["jwks_url"]
    a.authorize_url = lti["auth_url"]
    a.deployment_ids = set(lti["deployment_ids"])
    a.users = lti["users"]
    a.courses = {course["lti_context"]: {key: course[key] for key in ("id", "instructors", "graders", "students")}
                 for course in hub["courses"]}
    a.uri_scheme = "https" if hub["url"].startswith("https:") else "http"  # the address people open
    a.auto_login = True  # the hub's login page leads to the launch, which says to come from the LMS

# -- each person's server: JupyterLab with nbgrader, as that person ------------------------------------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [hub["singleuser"]]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.environment = {"PATH": hub["path"], "JAXPATH_EXCHANGE": hub["exchange"]}
c.Spawner.start_timeout = 300  # a server starts in seconds; this is a guard against a hang on a loaded machine
c.Spawner.http_timeout = 300
# what a server's own token may do: nbgrader's JupyterHubAuthPlugin reads its owner's groups (their courses),
# the course list reads the services
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", "read:users:name!user",
                                 "read:users:groups!user", "list:services", "read:services"]

staff_of = {}
for course in hub["courses"]:
    for person in course["staff"]:
        staff_of.setdefault(person, []).append(course["id"])


def by_role(spawner):
    """Staff and students read different Jupyter configuration (jaxpath/classroom/hub/setup.py writes both): which of
    nbgrader's extensions they get, and `groupshared` for staff. Staff work with umask 002, so what they write
    in a course directory stays writable by the rest of its staff (the directory itself, 2770, keeps everyone
    else out), and what they publish through the exchange (feedback pages) stays readable by its students."""
    kind = "staff" if spawner.user.name in staff_of else "students"
    spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": hub["jupyter_config"][kind]}
    if kind == "staff":
        spawner.cmd = [sh, "-c", 'umask 002 && exec "$0" "$@"', hub["singleuser"]]


c.Spawner.pre_spawn_hook = by_role

# -- courses: groups, roles, and a formgrader service each ----------------------------------------------------
groups, roles, services = {}, [], []
for course in hub["courses"]:
    cid = course["id"]
    # the course account too, as in nbgrader's demos: the formgrader it runs asks the hub for its own courses
    groups[f"formgrade-{cid}"] = {"users": course["staff"] + [course["account"]]}
    groups[f"nbgrader-{cid}"] = {"users": course["students"]}
    roles += [
        {"name": f"formgrade-{cid}", "groups": [f"formgrade-{cid}"],
         "scopes": [f"access:services!service={cid}", "list:services", f"read:services!service={cid}"]},
        {"name": f"nbgrader-{cid}", "groups": [f"nbgrader-{cid}"],
         "scopes": ["list:services", f"read:services!service={cid}"]},
        # the formgrader adds the students it is told about to the course's group (nbgrader's add_student_to_course)
        {"name": f"service-{cid}", "services": [cid],
         "scopes": [f"list:groups!group=nbgrader-{cid}", f"groups!group=nbgrader-{cid}", "read:users:groups"]},
    ]
    services.append({
        "name": cid,  # nbgrader: the service's name is the course id
        "url": course["service_url"],
        "command": [sh, "-c", 'umask 002 && exec "$0" "$@"', hub["singleuser"]],
        "user": course["account"],
        "cwd": course["directory"],
        "environment": {"PATH": hub["path"], "JAXPATH_EXCHANGE": hub["exchange"],
                        "JUPYTER_CONFIG_PATH": hub["jupyter_config"]["service"],
                        "JUPYTERHUB_DEFAULT_URL": "/formgrader"},
        "oauth_no_confirm": True,
    })
c.JupyterHub.load_groups = groups
c.JupyterHub.load_roles = roles
c.JupyterHub.services = services
