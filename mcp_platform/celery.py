"""The Celery application; embedded runs use the in-memory broker and an in-process worker."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")

app = Celery("mcp_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
