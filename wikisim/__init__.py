"""wikisim: a Wikipedia dump as an offline, exactly reproducible web for deep-research agents."""

__version__ = "0.1.0"
