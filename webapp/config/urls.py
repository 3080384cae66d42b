"""URL routes: pages, the REST API under /api/, OTLP/HTTP at /v1/traces, the admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("webapp.traces.urls")),
    path("", include("webapp.experiments.urls")),
]
