"""The Celery application; embedded runs use the in-memory broker and an in-process worker."""

import os

from celery import Celery
from celery.signals import beat_embedded_init, worker_init

from mcp_infra.serving.processes import beat_ends_with_worker
from mcp_platform.jobs.capacity import remember_worker_concurrency

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")

app = Celery("mcp_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The tenants app's Celery tasks belong to its federation package (the scheduled upstream refresh).
app.autodiscover_tasks(["tenants.federation"])

# ``celery worker --beat`` runs beat as a child process: it must not outlive a worker killed with SIGKILL.
beat_embedded_init.connect(beat_ends_with_worker)
# The default number of one tenant's runs at once is half the worker's concurrency (``jobs.capacity``).
worker_init.connect(remember_worker_concurrency)
