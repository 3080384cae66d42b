from django.urls import path

from . import views

urlpatterns = [
    path("accounts/invite/<str:key>/", views.invitation, name="invitation"),
    path("projects/", views.projects, name="projects"),
    path("projects/<int:project_id>/members/", views.members, name="project-members"),
    path("projects/<int:project_id>/settings/", views.project_settings, name="project-settings"),
    path("projects/<int:project_id>/delete/", views.project_delete, name="project-delete"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
]
