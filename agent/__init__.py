"""Agents on WikiSim-v0: policies, rollouts, the benchmark harness and the trainer."""

import os

# OpenMP's worker threads spin while they wait for work. On a CPU shared with other processes
# (2 cores, several jobs) that made each SmolLM2 decode step 4-8x slower than sleeping waits;
# sleeping costs little when the cores are free. Read once, when torch loads: it only takes
# effect if `agent` is imported first, and a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
