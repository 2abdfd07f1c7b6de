"""The ASGI servers the platform runs under (``servers``: uvicorn, daphne, granian; ``manage.py serve``), the
header bounds two of them lack (``uvicorn_protocol``, ``daphne_channel``), and children that die with their parent
(``processes``)."""
