"""Cross-process messaging on the channel layer: tenant-scoped group names (``groups``) and the one channel per
process on which every signal for work running there arrives (``mailbox``)."""
