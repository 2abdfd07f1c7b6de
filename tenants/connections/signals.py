"""What happens to people's connections, for the rooms above that act on it (the gateway tells the person's open
sessions; the activity log records it). Sent after commit; receivers must not raise."""

from __future__ import annotations

import django.dispatch

# A person finished connecting (or storing a key) through a link that a call's question carried:
# kwargs ``tenant_id``, ``user_id``, ``elicitation_id``, ``target``.
connection_completed = django.dispatch.Signal()

# Something happened to a person's credential (``ConnectionEvent``): connected, refreshed (or refused), used,
# revoked, a key stored or removed. For the activity log; the event never carries a token or key.
connection_event = django.dispatch.Signal()
