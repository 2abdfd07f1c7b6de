"""A static tool's result as content blocks in the admin: text, an uploaded image (judged by its bytes, capped), an
embedded resource and a resource link are stored exactly as ``tools/call`` returns them; a tool opens and saves
unchanged from its page without script; bad blocks are refused by number, keeping what was typed and chosen; a
stored image is kept only by the tool that stores it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tenants import services
from tenants.admin.uploads import MAX_UPLOAD_BYTES, base64_encode, image_digest
from tenants.backends.static import tool_invoke
from tenants.models import Tenant, Tool
from tests.images import GIF, PNG
from tests.tenants.admin.page_forms import form_posted, with_values

pytestmark = pytest.mark.django_db

ADD = "admin:tenants_tool_add"
JSONObject = dict[str, Any]


PNG_BLOCK = {"type": "image", "data": base64_encode(PNG), "mimeType": "image/png"}


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def add_page(client: Client, tenant: Tenant, **values: Any) -> dict[str, list[Any]]:
    """The add form as a browser without script posts it, with ``values`` filled in."""
    posted = form_posted(client.get(reverse(ADD), {"tenant": tenant.pk}).content.decode(), "tool_form")
    return with_values(posted, tenant=str(tenant.pk), backend="static", **values)


def errors_of(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}


def test_a_static_tool_is_written_as_blocks_of_every_kind(owner: Client, tenant: Tenant) -> None:
    form = add_page(
        owner,
        tenant,
        name="every_kind",
        static_blocks_0_kind="text",
        static_blocks_0_text="Hello,\r\nworld.",
        static_blocks_1_kind="image",
        static_blocks_1_image=SimpleUploadedFile("pixel.png", PNG, content_type="image/png"),
    )
    # The page offers two empty blocks; a third and fourth as the script would add them.
    form |= {
        "static_blocks_2_kind": ["resource"],
        "static_blocks_2_uri": ["docs://guide/intro"],
        "static_blocks_2_mime": ["text/markdown"],
        "static_blocks_2_text": ["# Intro\r\n"],
        "static_blocks_3_kind": ["resource_link"],
        "static_blocks_3_uri": ["https://example.com/report.pdf"],
        "static_blocks_3_name": ["report"],
        "static_blocks_3_description": ["The yearly report"],
        "static_blocks_3_mime": ["application/pdf"],
    }

    response = owner.post(reverse(ADD), form)

    assert response.status_code == 302, errors_of(response)
    content = [
        {"type": "text", "text": "Hello,\nworld."},
        PNG_BLOCK,
        {
            "type": "resource",
            "resource": {"uri": "docs://guide/intro", "mimeType": "text/markdown", "text": "# Intro\n"},
        },
        {
            "type": "resource_link",
            "uri": "https://example.com/report.pdf",
            "name": "report",
            "description": "The yearly report",
            "mimeType": "application/pdf",
        },
    ]
    tool = Tool.objects.get(tenant=tenant, name="every_kind")
    assert tool.config == {"content": content}
    assert tool_invoke(tool) == {"content": content}


STORED_CONFIGS: list[JSONObject] = [
    {"content": [{"type": "text", "text": "\nstarts with a line break\n\n  and keeps its spaces  "}]},
    {"content": [PNG_BLOCK, {"type": "text", "text": "a pixel"}], "isError": True},
    {"content": [{"type": "resource", "resource": {"uri": "docs://a", "text": ""}}]},
    {"content": [{"type": "resource_link", "uri": "docs://b", "name": "b"}], "structuredContent": {"n": 1}},
    {"content": []},
]
# What the blocks cannot hold as stored: the whole content stays in Advanced (JSON).
ODD_CONFIGS: list[JSONObject] = [
    {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": ""}]},
    {"content": [{"type": "text", "text": "carriage\rreturn"}]},
    {"content": [{"type": "image", "data": "PHN2Zz48L3N2Zz4=", "mimeType": "image/svg+xml"}]},
    {"content": [{"type": "image", "data": base64_encode(GIF), "mimeType": "image/png"}]},
    {"content": [{"type": "resource", "resource": {"uri": "docs://a", "blob": "aGk="}}]},
    {"content": [{"type": "resource_link", "uri": "docs://b", "name": "b", "title": "B"}]},
    {"content": [{"type": "resource_link", "uri": "no scheme", "name": "b"}]},
    {"content": [{"type": "text", "text": "noted", "annotations": {"priority": 1}}]},
]


@pytest.mark.parametrize("config", STORED_CONFIGS + ODD_CONFIGS)
def test_a_tool_opens_and_saves_unchanged_without_script(admin_client: Client, tenant: Tenant, config: Any) -> None:
    tool = services.tool_create(tenant=tenant, name="stored", config=config)
    url = reverse("admin:tenants_tool_change", args=[tool.pk])
    page = admin_client.get(url)
    form = page.context["adminform"].form

    response = admin_client.post(url, form_posted(page.content.decode(), "tool_form"))

    assert response.status_code == 302, errors_of(response)
    tool.refresh_from_db()
    assert tool.config == config
    in_blocks = config in STORED_CONFIGS
    assert (form.initial["config"] is None or "content" not in form.initial["config"]) == in_blocks


def test_a_stored_image_shows_as_a_preview_and_an_unsafe_one_does_not(admin_client: Client, tenant: Tenant) -> None:
    shown = services.tool_create(tenant=tenant, name="pixel", config={"content": [PNG_BLOCK]})
    svg = {"type": "image", "data": "PHN2Zz48L3N2Zz4=", "mimeType": "image/svg+xml"}
    odd = services.tool_create(tenant=tenant, name="drawing", config={"content": [svg]})

    response = admin_client.get(reverse("admin:tenants_tool_change", args=[shown.pk]))
    page = response.content.decode()
    other = admin_client.get(reverse("admin:tenants_tool_change", args=[odd.pk])).content.decode()

    # The preview is a data: URL: the admin's pages may send no policy that forbids one (they send none today).
    policy = response.headers.get("Content-Security-Policy")
    assert policy is None or re.search(r"img-src[^;]*\sdata:", policy)
    assert f'<img src="data:image/png;base64,{PNG_BLOCK["data"]}"' in page
    assert f"Stored: image/png, {len(PNG)} bytes." in page
    assert "data:image/svg" not in other


def test_an_image_over_the_cap_is_refused_and_what_was_typed_stays(owner: Client, tenant: Tenant) -> None:
    big = PNG + b"\x00" * (MAX_UPLOAD_BYTES + 1 - len(PNG))
    form = add_page(
        owner,
        tenant,
        name="too_big",
        static_blocks_0_kind="image",
        static_blocks_0_image=SimpleUploadedFile("big.png", big, content_type="image/png"),
        static_blocks_1_text="Kept as typed.",
    )

    response = owner.post(reverse(ADD), form)

    assert errors_of(response)["static_blocks"] == [
        "Block 1: The file is 1,048,577 bytes; at most 1 MiB (1,048,576 bytes) can be stored here."
    ]
    assert "Kept as typed." in response.content.decode()
    assert not Tool.objects.filter(name="too_big").exists()


def test_a_file_is_judged_by_its_bytes_not_its_name_or_claimed_type(owner: Client, tenant: Tenant) -> None:
    fake = SimpleUploadedFile("notes.png", b"just some text, no picture", content_type="image/png")
    renamed = SimpleUploadedFile("really-a-gif.png", GIF, content_type="image/png")

    refused = owner.post(
        reverse(ADD), add_page(owner, tenant, name="fake", static_blocks_0_kind="image", static_blocks_0_image=fake)
    )
    taken = owner.post(
        reverse(ADD), add_page(owner, tenant, name="gif", static_blocks_0_kind="image", static_blocks_0_image=renamed)
    )

    assert errors_of(refused)["static_blocks"] == [
        "Block 1: The file is not a PNG, JPEG, GIF or WebP image (judged by its first bytes, not its name)."
    ]
    assert taken.status_code == 302, errors_of(taken)
    assert Tool.objects.get(name="gif").config["content"][0]["mimeType"] == "image/gif"


def test_blocks_missing_what_their_kind_needs_are_refused_by_number(owner: Client, tenant: Tenant) -> None:
    form = add_page(
        owner,
        tenant,
        name="incomplete",
        static_blocks_0_kind="resource_link",
        static_blocks_0_name="report",
        static_blocks_1_kind="text",
        static_blocks_1_uri="docs://stray",
    )
    form |= {"static_blocks_2_kind": ["resource"], "static_blocks_2_uri": ["no scheme"]}

    response = owner.post(reverse(ADD), form)

    assert errors_of(response)["static_blocks"] == [
        "Block 1: a resource link needs a URI.",
        "Block 2: a text block has no URI: clear it, or choose the kind of block that has it.",
        "Block 3: 'no scheme' is not a URI with a scheme, such as https:// or docs://.",
    ]
    assert not Tool.objects.filter(name="incomplete").exists()


def test_a_chosen_image_survives_an_error_elsewhere_on_the_page(owner: Client, tenant: Tenant) -> None:
    form = add_page(
        owner,
        tenant,
        name="second_try",
        static_blocks_0_kind="image",
        static_blocks_0_image=SimpleUploadedFile("pixel.png", PNG, content_type="image/png"),
        static_blocks_1_kind="resource_link",
        static_blocks_1_name="no uri yet",
    )

    shown = owner.post(reverse(ADD), form)
    again = form_posted(shown.content.decode(), "tool_form")
    fixed = owner.post(reverse(ADD), with_values(again, static_blocks_1_uri="docs://now"))

    assert "static_blocks" in errors_of(shown)
    assert again["static_blocks_0_kept"] == [f"data:image/png;base64,{PNG_BLOCK['data']}"]
    assert fixed.status_code == 302, errors_of(fixed)
    assert Tool.objects.get(name="second_try").config["content"] == [
        PNG_BLOCK,
        {"type": "resource_link", "uri": "docs://now", "name": "no uri yet"},
    ]


def test_another_tools_image_cannot_be_kept_by_its_digest(owner: Client, tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = services.tool_create(tenant=other_tenant, name="secret_picture", config={"content": [PNG_BLOCK]})
    mine = services.tool_create(tenant=tenant, name="mine", config={"content": [{"type": "text", "text": "x"}]})
    digest = "sha256:" + image_digest(PNG_BLOCK["data"], PNG_BLOCK["mimeType"])
    url = reverse("admin:tenants_tool_change", args=[mine.pk])
    form = form_posted(owner.get(url).content.decode(), "tool_form")

    response = owner.post(url, with_values(form, static_blocks_1_kind="image", static_blocks_1_kept=digest))
    forged = owner.post(
        url, with_values(form, static_blocks_1_kind="image", static_blocks_1_kept="data:image/png;base64,bm90IGEgcG5n")
    )

    assert errors_of(response)["static_blocks"] == ["Block 2: the image is no longer stored: choose its file again."]
    assert errors_of(forged)["static_blocks"] == ["Block 2: The image's bytes are not image/png."]
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.config == {"content": [{"type": "text", "text": "x"}]}
    assert PNG_BLOCK["data"] not in response.content.decode()


def test_the_add_form_is_multipart_and_offers_empty_blocks_and_leave_out_boxes(owner: Client) -> None:
    page = owner.get(reverse(ADD)).content.decode()

    assert 'enctype="multipart/form-data"' in page
    assert 'name="static_blocks_0_kind"' in page and 'name="static_blocks_1_kind"' in page
    assert 'name="static_blocks_2_kind"' not in page
    assert 'accept="image/png,image/jpeg,image/gif,image/webp"' in page
    assert "Leave out block 1" in page
