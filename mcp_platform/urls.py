"""Django URL routes: the admin and the pages people see (the MCP endpoint is routed in asgi.py)."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
