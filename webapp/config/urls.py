"""URL routes: pages, the REST API under /api/, OTLP/HTTP at /v1/traces, the admin, /healthz."""

from django.contrib import admin
from django.urls import include, path

from webapp.web.openapi import openapi_document

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/openapi.json", openapi_document, name="api-openapi"),
    path("", include("webapp.accounts.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("webapp.traces.urls")),
    path("", include("webapp.counterfactuals.urls")),
    path("", include("webapp.training.urls")),
    path("", include("webapp.review.urls")),
]

# Unknown URLs under /api/ and /v1/ answer JSON, like unknown ids.
handler404 = "webapp.web.api.not_found"
