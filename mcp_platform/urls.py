"""Django URL routes: the landing page, the admin, the authorization server and the pages people see.

The MCP endpoints are routed in asgi.py.
"""

from django.contrib import admin
from django.urls import include, path

from mcp_platform.landing import favicon, landing_page
from mcp_platform.telemetry.views import metrics_view

urlpatterns = [
    path("", landing_page, name="landing"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("", include("mcp_platform.oauth.urls")),
    path("account/", include("mcp_platform.oauth.pages")),
    path("connect/", include("mcp_platform.oauth.connect")),
]
