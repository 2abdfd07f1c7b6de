"""The Model Context Protocol as a pure library: bytes, headers and plain data in; decisions and bytes out.

Nothing here performs I/O, reads the clock or settings, or imports django, channels, celery or asyncio.
"""
