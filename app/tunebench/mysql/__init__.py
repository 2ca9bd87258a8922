"""Everything that speaks SQL to a target: connect, introspect, knobs, probes."""
