"""The activity log: every tool call, resource read and prompt request, and every admin change, per tenant."""
