"""Pure domain code: records, statistics, names. No Qt, no I/O."""
