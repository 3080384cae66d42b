from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TracesConfig(AppConfig):
    name = "webapp.traces"
    label = "traces"

    def ready(self):
        from .facets import ensure_triggers  # noqa: PLC0415 - models load once the app registry is ready
        from .search import ensure_index  # noqa: PLC0415

        # SQLite drops a table's triggers when a migration rebuilds it: put the facet counts' back.
        post_migrate.connect(ensure_triggers, sender=self, dispatch_uid="trace-facet-count-triggers")
        # ... and the event search index's (webapp.traces.search), rebuilt from the events
        post_migrate.connect(ensure_index, sender=self, dispatch_uid="event-search-index")
