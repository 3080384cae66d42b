"""URL routes: pages, the REST API under /api/, OTLP/HTTP at /v1/traces, the admin, /healthz."""

from django.contrib import admin
from django.urls import include, path

from webapp.accounts.views import ThrottledLoginView
from webapp.web.openapi import openapi_document

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/openapi.json", openapi_document, name="api-openapi"),
    path("", include("webapp.accounts.urls")),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),  # failed logins throttled
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("webapp.traces.urls")),
    path("", include("webapp.counterfactuals.urls")),
    path("", include("webapp.training.urls")),
    path("", include("webapp.review.urls")),
]

# Friendly pages for people, JSON under /api/ and /v1/ (like unknown ids); with DEBUG on too, by
# webapp.web.errors.FriendlyErrorsMiddleware (unless SWARMSCOPE_DEBUG_PAGES=1).
handler400 = "webapp.web.errors.bad_request"
handler404 = "webapp.web.errors.not_found"
handler500 = "webapp.web.errors.server_error"
