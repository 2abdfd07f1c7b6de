"""Django's PostgreSQL backend with a liveness check that costs no round trip (``ENGINE``: this package)."""
