"""Where processes run: the local runner, the embedded sandbox server, host telemetry."""
