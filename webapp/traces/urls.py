from django.urls import path

from . import api, lod, sample_views, views

urlpatterns = [
    path("", views.trace_list, name="trace-list"),
    path("traces/<int:trace_id>/", views.trace_detail, name="trace-detail"),
    path("traces/compare/", views.trace_compare, name="trace-compare"),
    path("sessions/<path:session_id>/", views.session_detail, name="session-detail"),
    path("upload/", views.upload, name="upload"),
    path("samples/load/", sample_views.load_samples, name="load-samples"),
    path("traces/<int:trace_id>/delete/", views.trace_delete, name="trace-delete"),
    path("api/traces/", api.traces, name="api-traces"),
    path("api/traces/upload/", api.traces_upload, name="api-traces-upload"),
    path("api/traces/export.jsonl", api.traces_export_jsonl, name="api-traces-export"),
    path("api/traces/<int:trace_id>/", api.trace_detail, name="api-trace"),
    path("api/traces/<int:trace_id>/events/", api.trace_events, name="api-trace-events"),
    path("api/traces/<int:trace_id>/close/", api.trace_close, name="api-trace-close"),
    path("api/traces/<int:trace_id>/snapshot/", api.trace_snapshot, name="api-trace-snapshot"),
    path("api/traces/<int:trace_id>/export/", api.trace_export, name="api-trace-export"),
    path("api/traces/<int:trace_id>/snapshot/lod/", lod.lod_snapshot, name="api-trace-lod-snapshot"),
    path("api/traces/<int:trace_id>/overview/", lod.trace_overview, name="api-trace-overview"),
    path("api/traces/<int:trace_id>/window/", lod.trace_window, name="api-trace-window"),
    path("api/traces/<int:trace_id>/search/", lod.trace_search, name="api-trace-search"),
    path("v1/traces", api.otlp_traces, name="otlp-traces"),
    path("v1/logs", api.otlp_logs, name="otlp-logs"),
]
