"""Django URL routes: the admin, the authorization server and the pages people see.

The MCP endpoints are routed in asgi.py.
"""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("mcp_platform.oauth.urls")),
    path("account/", include("mcp_platform.oauth.pages")),
]
