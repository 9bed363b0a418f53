"""WikiSim-v0: the env, its task sets, rewards and replay."""

from wikisim.env.core import WikiSimEnv

__all__ = ["WikiSimEnv"]
