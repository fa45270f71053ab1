"""GitHub: the REST client, commit statuses and the sticky comment, the fork hand-off (R12)."""
