from django.apps import AppConfig


class WebConfig(AppConfig):
    """The shared web layer: API plumbing, the OpenAPI document, socket base and broadcasts, `up`."""

    name = "webapp.web"
    label = "web"
