"""A platform instance that plays a person's upstream in the end-to-end tests of issue 30: the platform's own settings
plus a Django app (``apps``) registering a Python tool that says whom a call acts for (``tools``). Started by
``tests/e2e/personal_upstreams.py`` with ``DJANGO_SETTINGS_MODULE=tests.upstreams.personal_platform.settings``."""
