"""Load generation: workloads, sysbench-identical statements, the builtin and sysbench engines."""
