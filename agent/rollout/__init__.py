"""Episodes: policies, the ReAct bookkeeping of a turn, batched rollouts over envs, trajectories."""
