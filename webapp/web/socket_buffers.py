"""Bounded send buffers of live sockets under Daphne: a reader that stops reading is dropped, not
buffered for without limit.

Daphne hands each `websocket.send` of a consumer straight to autobahn's `sendMessage`, which writes
to the Twisted transport; the transport keeps whatever the client has not read yet, with no bound
and nothing said to the application (ASGI has no backpressure for websockets). Twisted's producer
API is the hook: a streaming producer registered on the transport is paused when the transport
holds over its `bufferSize` (64 KiB) unsent and resumed when it has sent it all. `install_daphne_socket_limits`
(called by webapp.config.asgi inside a Daphne process) registers a `SendBuffer` on every websocket
when it opens and counts what is sent while it is paused: past SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES
the socket is closed with SLOW_READER (4008) and a reason, and nothing more is written to it. The
close frame queues behind the unsent data; autobahn drops the connection when the client has not
answered it within SLOW_READER_CLOSE_S, which frees the buffer. The client reconnects with
`?seq=N` (static/js/lib/live_connection.js) and gets what it missed.
"""

from __future__ import annotations

import logging

from django.conf import settings
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

logger = logging.getLogger(__name__)

#: Close code of a socket dropped because its reader fell behind.
SLOW_READER = 4008
#: Seconds a dropped socket's unsent data (at most the limit plus 64 KiB) is kept for the reader to
#: reach the close frame behind it and read its code; then the connection is aborted.
SLOW_READER_CLOSE_S = 10


@implementer(IPushProducer)
class SendBuffer:
    """What one websocket's transport holds past Twisted's `bufferSize`: `held` bytes written
    since the transport paused it (reset when the transport has sent everything); `dropped` once
    the socket was closed for it, or the transport stopped. `chained`: the producer the transport
    had (Twisted's HTTPChannel, which stops reading the client while the buffer is full), told
    everything this one is told, so that it keeps doing so."""

    def __init__(self, chained=None) -> None:
        self.paused = False
        self.held = 0
        self.dropped = False
        self.chained = chained

    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's interface
        self.paused = True
        if self.chained is not None:
            self.chained.pauseProducing()

    def resumeProducing(self) -> None:  # noqa: N802
        self.paused, self.held = False, 0
        if self.chained is not None:
            self.chained.resumeProducing()

    def stopProducing(self) -> None:  # noqa: N802
        self.dropped = True
        if self.chained is not None:
            self.chained.stopProducing()

    def take(self, size: int, limit: int) -> bool:
        """Count a message of `size` bytes about to be written; False when it must not be (the
        socket is over `limit` unsent bytes past the transport's own buffer, or already dropped)."""
        if self.dropped:
            return False
        if self.paused:
            self.held += size
            if self.held > limit:
                self.dropped = True
                return False
        return True


def install_daphne_socket_limits() -> None:
    """Bound the send buffer of every Daphne websocket (the module docstring says how). Idempotent."""
    from daphne import ws_protocol  # noqa: PLC0415 - only inside a Daphne process

    protocol = ws_protocol.WebSocketProtocol
    if getattr(protocol, "swarmscope_send_limit", False):
        return
    on_open, server_send = protocol.onOpen, protocol.serverSend

    def onOpen(self):  # noqa: N802
        # The upgraded HTTP channel is the transport's streaming producer: this one takes its place
        # and passes everything on to it. Another kind of producer, or none to take over from a
        # transport that has no producer API: left as it is (unbounded, as before).
        transport, self.swarmscope_send_buffer = self.transport, None
        chained = getattr(transport, "producer", None)
        streaming = chained is None or getattr(transport, "streamingProducer", False)
        if streaming and hasattr(transport, "registerProducer"):
            buffer = SendBuffer(chained)
            if chained is not None:
                transport.unregisterProducer()
            transport.registerProducer(buffer, True)
            self.swarmscope_send_buffer = buffer
        return on_open(self)

    def serverSend(self, content, binary=False):  # noqa: N802
        buffer = getattr(self, "swarmscope_send_buffer", None)
        limit = settings.SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES
        if buffer is not None and not buffer.take(len(content), limit):
            if buffer.held > limit and self.state == self.STATE_OPEN:
                logger.info(
                    "websocket %s: reader over %d bytes behind, closed with %d", self.client_addr, limit, SLOW_READER
                )
                self.closeHandshakeTimeout = SLOW_READER_CLOSE_S  # read at the close: its timer
                self.sendClose(
                    code=SLOW_READER,
                    reason=f"slow reader: over {limit} bytes unsent (SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES);"
                    " resume with ?seq=N",
                )
            return None
        return server_send(self, content, binary)

    protocol.onOpen, protocol.serverSend = onOpen, serverSend
    protocol.swarmscope_send_limit = True
