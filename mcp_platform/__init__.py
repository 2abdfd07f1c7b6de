"""The Django project: settings, ASGI routing, the Celery app, and the runtime apps below it."""

from mcp_platform.celery import app as celery_app

__all__ = ["celery_app"]
