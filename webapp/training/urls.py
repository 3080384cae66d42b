from django.urls import path

from . import api, views

urlpatterns = [
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_new, name="run-new"),
    path("runs/compare/", views.run_compare, name="run-compare"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run-resume"),
    path("api/runs/", api.runs, name="api-runs"),
    path("api/runs/<int:run_id>/", api.run_detail, name="api-run"),
    path("api/runs/<int:run_id>/snapshot/", api.run_snapshot, name="api-run-snapshot"),
    path("api/runs/<int:run_id>/iterations/", api.run_iterations, name="api-run-iterations"),
    path("api/runs/<int:run_id>/finish/", api.run_finish, name="api-run-finish"),
    path("api/runs/<int:run_id>/cancel/", api.run_cancel, name="api-run-cancel"),
    path("api/runs/<int:run_id>/resume/", api.run_resume, name="api-run-resume"),
]
