"""The MCP_PLATFORM system check: a bad value fails at start-up with a message naming it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from mcp_infra.conf import POSITIVE_INTEGERS, check_platform_settings


def _errors(**changes: object) -> dict[str, str]:
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, **changes}):
        return {error.msg: error.id for error in check_platform_settings(None)}


def test_the_configured_settings_pass():
    assert check_platform_settings(None) == []


@pytest.mark.parametrize("name", POSITIVE_INTEGERS)
@pytest.mark.parametrize("value", [0, -5, True, 1.5])
def test_a_setting_that_must_be_a_positive_integer_is_refused_otherwise(name, value):
    errors = _errors(**{name: value})
    assert errors[f"MCP_PLATFORM[{name!r}] must be an integer > 0."] == "mcp_platform.E008"
    assert list(errors.values()).count("mcp_platform.E008") == 1


def test_each_failing_setting_is_reported_with_its_own_message():
    errors = _errors(TENANT_CACHE_TTL=-1, TRUSTED_PROXIES=["not-a-network"], PAGE_SIZE=0)
    assert set(errors.values()) == {"mcp_platform.E009", "mcp_platform.E011", "mcp_platform.E003"}


@pytest.mark.parametrize("name", ["HEADER_TIMEOUT", "BODY_TIMEOUT"])
@pytest.mark.parametrize("value", [0, -1, 3601, True, "10"])
def test_a_request_timeout_outside_an_hour_is_refused(name, value):
    errors = _errors(**{name: value})
    assert errors[f"MCP_PLATFORM[{name!r}] must be between 0 and 3600 seconds."] == "mcp_platform.E031"


def test_a_header_limit_below_4096_bytes_is_refused():
    assert _errors(MAX_HEADER_BYTES=4095) == {
        "MCP_PLATFORM['MAX_HEADER_BYTES'] must be at least 4096.": "mcp_platform.E030"
    }


@pytest.mark.parametrize("value", [0, -1, 61, True, "1"])
def test_a_metrics_fold_interval_outside_a_minute_is_refused(value):
    assert _errors(METRICS_FOLD_SECONDS=value) == {
        "MCP_PLATFORM['METRICS_FOLD_SECONDS'] must be above 0 and at most 60 seconds.": "mcp_platform.E014"
    }
    assert _errors(METRICS_FOLD_SECONDS=0.25) == {}
