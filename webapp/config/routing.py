"""Every websocket route of the app (the ASGI entry mounts them behind the origin check)."""

from django.urls import path

from webapp.review.consumers import NotificationConsumer, ProjectConsumer
from webapp.traces.consumers import TraceConsumer
from webapp.traces.list_consumer import TraceListConsumer
from webapp.training.consumers import RunConsumer, RunListConsumer

websocket_urlpatterns = [
    path("ws/traces/<int:trace_id>/", TraceConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/projects/<int:project_id>/", ProjectConsumer.as_asgi()),
    path("ws/projects/<int:project_id>/traces/", TraceListConsumer.as_asgi()),
    path("ws/projects/<int:project_id>/runs/", RunListConsumer.as_asgi()),
    path("ws/users/<int:user_id>/notifications/", NotificationConsumer.as_asgi()),
]
