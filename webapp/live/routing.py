from django.urls import path

from webapp.review.routing import websocket_urlpatterns as review_websocket_urlpatterns
from webapp.runs.consumers import RunConsumer

from .consumers import TraceConsumer

websocket_urlpatterns = [
    path("ws/traces/<int:trace_id>/", TraceConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
] + review_websocket_urlpatterns
