from django.apps import AppConfig


class CounterfactualsConfig(AppConfig):
    name = "webapp.counterfactuals"
    label = "experiments"
