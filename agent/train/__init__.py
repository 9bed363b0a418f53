"""Training against the env: rejection-sampled SFT, GRPO, losses, weight sync, curriculum."""
