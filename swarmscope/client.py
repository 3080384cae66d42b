"""The REST client, as `swarmscope.client`: a re-export of the `swarmscope-client` distribution
(clients/python, import package `swarmscope_client`), which holds the one implementation and
installs without the rest of Swarmscope. Standard library only.

    from swarmscope.client import Client
    client = Client()  # SWARMSCOPE_URL, SWARMSCOPE_API_KEY (and SWARMSCOPE_PROJECT) from the environment
"""

from __future__ import annotations

from swarmscope_client.client import Client, SwarmscopeClient, SwarmscopeError, TraceStream, settings_from_env

__all__ = ["Client", "SwarmscopeClient", "SwarmscopeError", "TraceStream", "settings_from_env"]
