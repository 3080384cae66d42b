from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "webapp.traces"
    label = "traces"
