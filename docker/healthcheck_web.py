"""The web role's health check: GET /healthz on this container's own port ($PORT, default 8000,
as docker/entrypoint-web.sh binds it); exits non-zero when it does not answer 200 within 4 s."""

import os
import urllib.request

urllib.request.urlopen(f"http://127.0.0.1:{os.environ.get('PORT') or '8000'}/healthz", timeout=4)
