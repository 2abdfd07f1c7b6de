"""Beat keeps its schedule file under the var directory whichever way it starts: the working directory is the
checkout in development and a read-only root file system in a container (docker/, deploy/kubernetes/)."""

from __future__ import annotations

from pathlib import Path

from celery.apps.beat import Beat
from celery.beat import EmbeddedService
from django.conf import settings

from mcp_platform.celery import app


def test_celery_beat_and_the_embedded_beat_open_their_schedule_in_the_var_directory() -> None:
    """``celery beat`` (Beat) and the beat of ``celery worker --beat`` and of an embedded ``serve`` (EmbeddedService)
    take the file from the settings when no ``--schedule`` is given, as the containers start them."""
    assert Path(app.conf.beat_schedule_filename).parent == settings.VAR_DIR
    assert Path(Beat(app=app).schedule) == Path(app.conf.beat_schedule_filename)
    assert Path(EmbeddedService(app, thread=True).service.schedule_filename) == Path(app.conf.beat_schedule_filename)
