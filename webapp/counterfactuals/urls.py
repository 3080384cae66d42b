from django.urls import path

from . import api, capabilities

urlpatterns = [
    path("api/traces/<int:trace_id>/counterfactuals/", api.trace_counterfactuals, name="api-trace-counterfactuals"),
    path(
        "api/traces/<int:trace_id>/counterfactuals/estimate/",
        api.trace_counterfactual_estimate,
        name="api-trace-counterfactual-estimate",
    ),
    path(
        "api/traces/<int:trace_id>/counterfactuals/capabilities/",
        api.trace_capabilities,
        name="api-trace-capabilities",
    ),
    path("help/what-if/", capabilities.help_view, name="help-what-if"),
    path("api/traces/<int:trace_id>/jobs/", api.trace_jobs, name="api-trace-jobs"),
    path("api/traces/<int:trace_id>/attributions/", api.trace_attributions, name="api-trace-attributions"),
    path("api/traces/<int:trace_id>/attributions/run/", api.trace_attribution_run, name="api-trace-attribution-run"),
    path(
        "api/traces/<int:trace_id>/attributions/estimate/",
        api.trace_attribution_estimate,
        name="api-trace-attribution-estimate",
    ),
    path("api/traces/<int:trace_id>/export/otlp/", api.trace_export_otlp, name="api-trace-export-otlp"),
    path("api/jobs/<int:job_id>/", api.job_detail, name="api-job"),
    path("api/jobs/<int:job_id>/cancel/", api.job_cancel, name="api-job-cancel"),
    path("api/jobs/<int:job_id>/retry/", api.job_retry, name="api-job-retry"),
]
