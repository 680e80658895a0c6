"""Views that need no trace: the capacity/bandwidth budget and the restore-or-recompute envelope."""
