"""pymsmq.qm: the queue manager (storage, transactions, timers, journals, dead letters, acks)."""
