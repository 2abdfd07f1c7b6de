"""A ``manage.py`` that stays up: it runs the management commands an end-to-end test sends it, one JSON line in
(``["shell", "-c", "…"]``) and one out (``{"code", "stdout", "stderr"}``), so a test pays Django's start-up once
per live platform instead of once per command. Started by ``tests/e2e/commands.py``; stdin closing ends it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from mcp_platform.gateway.session_cache import session_cache  # noqa: E402
from tenants.cache import tenant_cache  # noqa: E402


def run(args: list[str]) -> dict[str, object]:
    """Run ``manage.py *args`` as a fresh process would: no remembered tenant, no open connection after it."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    tenant_cache.clear()
    session_cache.clear()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            call_command(*args, stdout=out, stderr=err)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            connections.close_all()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    answers = sys.stdout
    for line in sys.stdin:
        answers.write(json.dumps(run(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
