"""Streams groups (KIP-1071): the ``streams`` group type of the group coordinator."""
