"""One module per server feature; each handler takes ``(params, env)`` and returns a result object."""
