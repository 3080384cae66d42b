from django.urls import path

from .consumers import TraceConsumer

websocket_urlpatterns = [
    path("ws/traces/<int:trace_id>/", TraceConsumer.as_asgi()),
]
