from django.apps import AppConfig


class CounterfactualsConfig(AppConfig):
    name = "webapp.counterfactuals"
    label = "experiments"

    def ready(self) -> None:
        """Give the traces layer the agent-removal attributions it decides free-riding from."""
        from webapp.traces.services import ATTRIBUTION_SOURCES  # noqa: PLC0415 (apps load before models)

        from .services import agent_removal_effects  # noqa: PLC0415

        if agent_removal_effects not in ATTRIBUTION_SOURCES:
            ATTRIBUTION_SOURCES.append(agent_removal_effects)
