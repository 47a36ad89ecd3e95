"""The machinery of the new rebalance protocol (KIP-848) that every modern group type shares:
server-side assignors, member reconciliation and epochs, subscriptions, member timers. Group types are
leaves beside :mod:`tidelog.coordinator.group.modern.consumer` (share and streams groups next)."""
