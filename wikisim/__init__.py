"""wikisim: a Wikipedia dump as an offline, exactly reproducible web for deep-research agents.

import gymnasium as gym, wikisim
env = gym.make("WikiSim-v0")
"""

__version__ = "0.1.0"

ENV_ID = "WikiSim-v0"


def register_envs() -> None:
    """Register WikiSim-v0 with Gymnasium (idempotent).

    Gymnasium 1.x no longer loads `gymnasium.envs` plugin entry points; in a fresh interpreter
    `gym.make("wikisim:WikiSim-v0")` imports this package, which registers the env. The entry
    point is a string, so registering imports only Gymnasium, not the env's indexes.
    """
    from gymnasium.envs.registration import register, registry

    if ENV_ID not in registry:
        register(id=ENV_ID, entry_point="wikisim.env.core:WikiSimEnv")


register_envs()
