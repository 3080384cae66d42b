from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "webapp.accounts"
    label = "accounts"

    def ready(self):
        from . import login_throttle, revocation  # noqa: PLC0415 - models are loaded only once the app registry is ready

        revocation.connect_signals()
        login_throttle.connect_signals()
