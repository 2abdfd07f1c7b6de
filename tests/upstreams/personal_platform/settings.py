"""The platform's settings with this package installed as an app, so its Python tools are registered in every process
of the instance (the web process and the commands that bind the tools)."""

from mcp_platform.settings import *  # noqa: F403
from mcp_platform.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.upstreams.personal_platform"]
