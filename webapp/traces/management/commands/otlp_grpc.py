"""`manage.py otlp_grpc`: the OTLP/gRPC receiver (webapp.traces.otlp_grpc) until SIGTERM or Ctrl-C.

`manage.py up` starts it beside Daphne. Exits with code 3 when the port is taken (another
collector on 4317?), which `up` reports without stopping the rest of the app.
"""

from __future__ import annotations

import signal
import sys
import threading

from django.core.management.base import BaseCommand

from webapp.traces.otlp_grpc import DEFAULT_PORT, make_server

PORT_IN_USE = 3


class Command(BaseCommand):
    help = "Receive OTLP over gRPC (TraceService and LogsService Export) on --host:--port."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT)

    def handle(self, *args, host, port, **options):
        try:
            server, bound = make_server(host, port)
        except RuntimeError as exc:
            self.stderr.write(f"OTLP/gRPC not started: {exc} (choose another with --grpc-port, or --no-grpc)")
            sys.exit(PORT_IN_USE)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write(f"OTLP/gRPC on {host}:{bound}")
        while not stop.wait(1):
            pass
        server.stop(grace=5).wait()
