from django.apps import AppConfig, apps
from django.db.models.signals import post_delete


def _delete_run_review(sender, instance, **kwargs):
    """Comments and activity on a run go with the run (runs have no foreign key from the review:
    the review's target is generic)."""
    from .models import Activity, Comment

    Comment.objects.filter(project_id=instance.project_id, target_kind="run", target_id=str(instance.pk)).delete()
    Activity.objects.filter(project_id=instance.project_id, target_kind="run", target_id=str(instance.pk)).delete()


class ReviewConfig(AppConfig):
    name = "webapp.review"
    label = "review"

    def ready(self):
        if apps.is_installed("webapp.runs"):
            post_delete.connect(_delete_run_review, sender="runs.Run", dispatch_uid="review-run-delete")
