"""Projects, membership roles and API tokens."""
