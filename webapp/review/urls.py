from django.urls import path

from . import api, views

urlpatterns = [
    path("projects/<int:project_id>/review/", views.project_review, name="project-review"),
    path("notifications/", views.notifications, name="notifications"),
    path("api/review/notifications/", api.notifications, name="api-review-notifications"),
    path("api/review/notifications/read/", api.notifications_read, name="api-review-notifications-read"),
    path(
        "api/review/traces/<int:trace_id>/attribution-votes/",
        api.trace_attribution_votes,
        name="api-review-attribution-votes",
    ),
    path("api/review/comments/", api.comments, name="api-review-comments"),
    path("api/review/comments/<int:comment_id>/", api.comment_detail, name="api-review-comment"),
    path("api/review/attributions/<int:attribution_id>/votes/", api.attribution_votes, name="api-review-votes"),
    path("api/review/traces/<int:trace_id>/status/", api.trace_status, name="api-review-status"),
    path(
        "api/review/traces/<int:trace_id>/mistake-labels/", api.trace_mistake_labels, name="api-review-mistake-labels"
    ),
    path("api/review/projects/<int:project_id>/activity/", api.project_activity, name="api-review-activity"),
    path("api/review/projects/<int:project_id>/agreement/", api.project_agreement, name="api-review-agreement"),
    path("api/review/projects/<int:project_id>/members/", api.project_members, name="api-review-members"),
]
