"""Production settings (DJANGO_DEBUG=0) as a deployment gets them from its environment (issue 18
item 12, low): env.example's placeholder secret is refused, HSTS preload is asked for, not assumed,
every response carries a Content-Security-Policy, X-Forwarded-Proto counts only where a setting
says the proxy is trusted, and the API is not redirected to HTTPS. Each case runs the settings in
a fresh interpreter (they are read once, at import)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.servers import REPO

#: What the subprocess prints: settings and the answers of three requests over plain HTTP.
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
c = Client()
login = c.get("/accounts/login/")
proxied = c.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
api = c.get("/api/traces/")
print(json.dumps({
    "preload": settings.SECURE_HSTS_PRELOAD,
    "proxy_header": getattr(settings, "SECURE_PROXY_SSL_HEADER", None),
    "login": login.status_code,
    "proxied": proxied.status_code,
    "api": api.status_code,
    "csp": proxied.get("Content-Security-Policy"),
    "hsts": proxied.get("Strict-Transport-Security"),
}))
"""


def production(tmp_path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SWARMSCOPE_", "SECURE_"))}
    env.update(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="k" + "7Zq!x9#Lm2$vB4&nR8*tW1@yC6^pD3%e" * 3,
        ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
        SWARMSCOPE_DATA_DIR=str(tmp_path),
    )
    env.update(extra)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def probe(tmp_path, **extra: str) -> dict:
    done = production(tmp_path, **extra)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def env_example_value(name: str) -> str:
    text = (REPO / "docker" / "env.example").read_text()
    return re.search(rf"^{name}=(.*)$", text, re.MULTILINE).group(1)


@pytest.mark.parametrize(
    "key", [env_example_value("DJANGO_SECRET_KEY"), "insecure-local-development-key-not-for-production"]
)
def test_a_placeholder_secret_key_is_refused_with_debug_off(tmp_path, key):
    done = production(tmp_path, DJANGO_SECRET_KEY=key)
    assert done.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY is the placeholder of docker/env.example" in done.stderr


def test_defaults_no_preload_a_csp_and_no_trust_in_x_forwarded_proto(tmp_path):
    seen = probe(tmp_path)
    assert seen["preload"] is False and "preload" not in (seen["hsts"] or "")
    assert seen["proxy_header"] is None
    assert seen["login"] == 301 and seen["proxied"] == 301  # a client's own X-Forwarded-Proto is not believed
    assert seen["api"] == 401  # the API answers plain HTTP (a token is needed), no redirect a script cannot follow
    policy = dict(part.strip().split(" ", 1) for part in seen["csp"].split(";"))
    assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'" and policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"


def test_a_trusted_proxy_and_preload_are_settings(tmp_path):
    seen = probe(tmp_path, SWARMSCOPE_TRUST_PROXY_HEADERS="1", SECURE_HSTS_PRELOAD="1", SWARMSCOPE_CSP="")
    assert seen["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert seen["login"] == 301 and seen["proxied"] == 200  # behind the proxy the page shows
    assert seen["preload"] is True and "preload" in seen["hsts"]
    assert seen["csp"] is None
