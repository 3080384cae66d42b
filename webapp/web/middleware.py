"""Websocket origin checking that fits both kinds of client."""

from urllib.parse import parse_qs

from channels.security.websocket import AllowedHostsOriginValidator


class OriginValidatorUnlessToken:
    """Check the Origin header (against ALLOWED_HOSTS) unless the client authenticates with `?token=`.

    The origin check protects cookie sessions from cross-site websocket hijacking; an API token is
    not sent by a browser on its own, so scripts and SDK clients connect without an Origin header.
    """

    def __init__(self, app):
        self.app = app
        self.checked = AllowedHostsOriginValidator(app)

    async def __call__(self, scope, receive, send):
        has_token = bool(parse_qs(scope.get("query_string", b"").decode()).get("token"))
        return await (self.app if has_token else self.checked)(scope, receive, send)
