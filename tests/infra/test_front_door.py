"""The platform's front door: the landing page at /, the favicon, and static files streamed without Django's
"synchronous iterators" warning under ASGI."""

from __future__ import annotations

import warnings

import pytest
from django.test import AsyncClient, Client

from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_the_landing_page_points_to_the_admin_and_the_docs() -> None:
    response = Client().get("/")
    html = response.content.decode()

    assert response.status_code == 200
    assert 'href="/admin/"' in html
    assert "docs/admin/" in html and "README.md" in html
    assert 'href="https://modelcontextprotocol.io/"' in html
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert 'rel="icon"' in html


def test_the_landing_page_names_no_tenant() -> None:
    TenantFactory(slug="acme-secret-project", name="Acme's secret project")

    html = Client().get("/").content.decode()

    assert "acme-secret-project" not in html
    assert "secret project" not in html


def test_the_landing_page_takes_no_posts() -> None:
    assert Client().post("/").status_code == 405


def test_the_favicon_is_served() -> None:
    client = Client()

    redirect = client.get("/favicon.ico")
    icon = client.get(redirect["Location"])

    assert redirect.status_code == 301
    assert redirect["Location"] == "/static/favicon.svg"
    assert icon.status_code == 200
    assert icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content)


def test_admin_pages_name_their_icon(admin_client: Client) -> None:
    html = admin_client.get("/admin/").content.decode()

    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html


@pytest.mark.anyio
async def test_a_static_file_streams_asynchronously_under_asgi() -> None:
    response = await AsyncClient().get("/static/admin-platform.css")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "StreamingHttpResponse must consume synchronous iterators" would raise
        body = b"".join([part async for part in response])

    assert response.status_code == 200
    assert response.is_async
    assert response["Content-Type"].startswith("text/css")
    assert int(response["Content-Length"]) == len(body)
    assert b".tenant-glance" in body


@pytest.mark.anyio
async def test_a_range_of_a_static_file_is_streamed_too() -> None:
    response = await AsyncClient().get("/static/favicon.svg", headers={"Range": "bytes=0-3"})

    body = b"".join([part async for part in response])

    assert response.status_code == 206
    assert body == b"<svg"
