"""Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): the group model, the rebalance
protocol, LeaveGroup, and the embedded consumer protocol their members carry."""
