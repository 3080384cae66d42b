"""ASGI entry: HTTP to Django behind the body limits (webapp.web.body_limits.BodyLimitMiddleware:
413 before Django reads a body over its path's limit; inside Daphne, Twisted itself refuses it
while it arrives), websockets to the Channels routes of webapp.config.routing (behind the one
socket authentication path, webapp.web.middleware.SocketAuthentication: token or session + Origin)."""

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up first)

from webapp.config.routing import websocket_urlpatterns  # noqa: E402
from webapp.web.body_limits import BodyLimitMiddleware, install_daphne_limits  # noqa: E402
from webapp.web.middleware import SocketAuthentication  # noqa: E402
from webapp.web.socket_buffers import install_daphne_socket_limits  # noqa: E402

if "daphne.server" in sys.modules:  # served by Daphne (`manage.py up`, the web image)
    install_daphne_limits()
    install_daphne_socket_limits()  # a websocket whose reader stops is closed, not buffered for

application = ProtocolTypeRouter(
    {
        "http": BodyLimitMiddleware(django_asgi_app),
        "websocket": SocketAuthentication(URLRouter(websocket_urlpatterns)),
    }
)
