"""A person at a browser, headless: signs in and answers the consent page through real HTTP requests.

Given the authorization URL a client would open, it follows the platform's redirects with a cookie-keeping
HTTP client, posts the sign-in form and then the consent form (CSRF tokens and hidden fields as a browser
would send them), and returns where the platform finally redirects: the client's redirect URI with the
code. Used by the SDK end-to-end tests and by ``scripts/conformance-authorization``.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx

MAX_HOPS = 10


class _PostForms(HTMLParser):
    """The inputs of each POST form on a page: ``[{name: value}]`` (buttons only when named ``allow``)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []
        self._current: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form" and values.get("method", "get").lower() == "post":
            self._current = {}
            self.forms.append(self._current)
        elif (
            tag == "input"
            and self._current is not None
            and values.get("name")
            and values.get("type", "text") not in ("submit", "button")
        ):
            self._current[values["name"]] = values.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def post_form(html: str, *, with_field: str) -> dict[str, str]:
    """The fields of the page's POST form that has a field called ``with_field`` (pages carry others, such as
    sign-out in the header)."""
    parser = _PostForms()
    parser.feed(html)
    for form in parser.forms:
        if with_field in form:
            return form
    raise AssertionError(f"no form with a {with_field!r} field on the page:\n{html[:2000]}")


class Person:
    """Someone with an account on the platform, deciding in a (headless) browser."""

    def __init__(self, username: str, password: str, *, allow: bool = True, timeout: float = 30.0) -> None:
        self.username = username
        self.password = password
        self.allow = allow
        self.browser = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        self.consents = 0

    async def __aenter__(self) -> Person:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.browser.aclose()

    async def authorize(self, authorization_url: str) -> str:
        """Open ``authorization_url``, sign in if asked, answer the consent page; the final redirect target.

        Raises ``AssertionError`` with the page when the platform shows an error instead.
        """
        url = authorization_url
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(authorization_url))
        for _ in range(MAX_HOPS):
            if not url.startswith(origin):
                return url  # left the platform: the client's redirect URI
            response = await self.browser.get(url)
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                continue
            if response.status_code != 200:
                raise AssertionError(f"{url} answered {response.status_code}:\n{response.text[:2000]}")
            path = urlsplit(url).path
            if path.startswith("/account/login/"):
                url = await self._sign_in(url, response.text)
            else:
                url = await self._consent(url, response.text)
        raise AssertionError(f"more than {MAX_HOPS} redirects from {authorization_url}")

    async def _sign_in(self, url: str, page: str) -> str:
        fields = {**post_form(page, with_field="password"), "username": self.username, "password": self.password}
        response = await self.browser.post(url, data=fields, headers={"referer": url})
        if not response.is_redirect:
            raise AssertionError(f"sign-in failed:\n{response.text[:2000]}")
        return urljoin(url, response.headers["location"])

    async def _consent(self, url: str, page: str) -> str:
        fields = post_form(page, with_field="client_id")
        if self.allow:
            fields["allow"] = "on"
        response = await self.browser.post(url, data=fields, headers={"referer": url})
        if not response.is_redirect:
            raise AssertionError(f"consent was not accepted:\n{response.text[:2000]}")
        self.consents += 1
        return urljoin(url, response.headers["location"])
