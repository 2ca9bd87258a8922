"""The orchestrator: experiment, knob journal, probes, server watch, run lock, the run's child process, and the
tasks both the CLI and the window call."""
