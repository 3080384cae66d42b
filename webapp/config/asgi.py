"""ASGI entry: HTTP to Django, websockets to the Channels routes of webapp.config.routing (behind the
one socket authentication path, webapp.web.middleware.SocketAuthentication: token or session + Origin)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up first)

from webapp.config.routing import websocket_urlpatterns  # noqa: E402
from webapp.web.middleware import SocketAuthentication  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SocketAuthentication(URLRouter(websocket_urlpatterns)),
    }
)
