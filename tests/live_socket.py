"""A Channels test communicator that checks every JSON message it receives against the live
protocol's schema of its socket (swarmscope.protocol_schema)."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator

from swarmscope.protocol_schema import validate_message
from webapp.config.asgi import application

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


class CheckedCommunicator(WebsocketCommunicator):
    """`WebsocketCommunicator` on the app whose `receive_json_from` validates each message
    (`socket`: "trace", "run" or "review") and whose `send_json_to` validates `resume` messages."""

    def __init__(self, socket: str, path: str, headers=None):
        super().__init__(application, path, headers=HEADERS if headers is None else headers)
        self.socket = socket

    async def receive_json_from(self, timeout=1):
        message = await super().receive_json_from(timeout=timeout)
        validate_message(self.socket, message)
        return message

    async def send_json_to(self, data):
        if isinstance(data, dict) and data.get("type") == "resume" and isinstance(data.get("seq"), int):
            validate_message(self.socket, data, client=True)
        await super().send_json_to(data)
